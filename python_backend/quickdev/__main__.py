import os
import sys

# `python -m quickdev` puts the working directory first on sys.path, and the editor
# starts the server in the workspace: a workspace holding logging.py or json.py would
# be imported in place of the standard library's. The entry is replaced, not removed,
# because a job's target sets sys.path[0] to where the script is, as python would.
if sys.path and sys.path[0] in ("", os.getcwd()):
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A job restarts once with the file interposer preloaded (quickdev/limits/journal/
# interposer.py): before the command line's modules are imported, so that they are not
# imported twice. cli.main asks again for a job started as the `quickdev` script.
if sys.argv[1:2] == ["run"] and "--keep-outputs" not in sys.argv:
    from quickdev.limits.journal.interposer import preload

    preload()

from quickdev.cli import main
from quickdev.options import WARM_START_GLOBAL

# A job forked from a warm process is handed how it began (quickdev/warm/__main__.py).
sys.exit(main(warm=globals().get(WARM_START_GLOBAL)))
