"""``python -m quickdev.warm FD``: a warm process serving the language server on FD.

In a job forked from it, ``serve`` returns the job's argv and the job runs from here as
``python -m quickdev`` runs it, so it exits through the interpreter's normal shutdown.
"""

import os
import sys

# As quickdev/__main__.py: the working directory is not where modules come from.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from quickdev.warm.zygote import serve  # noqa: E402

argv = serve(int(sys.argv[1]))
if argv is None:
    sys.exit(0)

from quickdev.cli import main  # noqa: E402

sys.exit(main(argv))
