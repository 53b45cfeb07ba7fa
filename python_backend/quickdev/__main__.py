from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing's: nothing is imported before a job's restart (below)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# `python -m quickdev` puts the working directory first on sys.path, and the editor
# starts the server in the workspace: a workspace holding logging.py or json.py would
# be imported in place of the standard library's. The entry is replaced, not removed,
# because a job's target sets sys.path[0] to where the script is, as python would.
if sys.path and sys.path[0] in ("", os.getcwd()):
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(run_globals: Mapping[str, Any] | None = None) -> int:
    """``python -m quickdev`` and the ``quickdev`` command. ``run_globals``: this module's
    globals when it runs as ``__main__``, where a job forked from a warm process finds how
    it began (quickdev/warm/__main__.py)."""
    # A job restarts once with the file interposer preloaded (quickdev/limits/journal/
    # interposer.py): before the command line's modules are imported, so that they are not
    # imported twice (0.06 s of CPU). cli.main asks again where this could not tell.
    if sys.argv[1:2] == ["run"] and "--keep-outputs" not in sys.argv:
        from quickdev.limits.journal.interposer import preload

        preload()

    from quickdev.cli import main as cli_main
    from quickdev.options import WARM_START_GLOBAL

    return cli_main(warm=(run_globals or {}).get(WARM_START_GLOBAL))


if __name__ == "__main__":
    sys.exit(main(globals()))
