import os
import sys

# `python -m quickdev` puts the working directory first on sys.path, and the editor
# starts the server in the workspace: a workspace holding logging.py or json.py would
# be imported in place of the standard library's. The entry is replaced, not removed,
# because a job's target sets sys.path[0] to where the script is, as python would.
if sys.path and sys.path[0] in ("", os.getcwd()):
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from quickdev.cli import main

sys.exit(main())
