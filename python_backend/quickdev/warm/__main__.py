"""``python -m quickdev.warm FD``: a warm process serving the language server on FD.

In a job forked from it, ``serve`` returns (argv set) and the job runs ``quickdev`` as
``python -m quickdev`` runs it (``__main__`` included), handing it how the job began
(``WarmStart``), and exits through the interpreter's normal shutdown. runpy, not a call
to ``quickdev.cli``: the warm package stays below the command line in the import graph.
"""

import os
import runpy
import sys

# As quickdev/__main__.py: the working directory is not where modules come from.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from quickdev.limits.journal.interposer import preload  # noqa: E402

# The jobs it forks have the file interposer, dormant until their journal starts.
preload()

from quickdev.options import WARM_START_GLOBAL  # noqa: E402
from quickdev.warm.zygote import serve  # noqa: E402

started = serve(int(sys.argv[1]))
if started is None:
    sys.exit(0)
runpy.run_module(
    "quickdev", init_globals={WARM_START_GLOBAL: started}, run_name="__main__", alter_sys=True
)
