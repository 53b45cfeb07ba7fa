"""Every phase of the script runs: a budget ends the user's loops, not the script.

When a budget is reached (steps, evaluation forwards, passes over the training loader)
the loops around that point are told to end at their next iteration, and the script goes
on after them: validation, test, the final checkpoint, the export all run. The job stops
the script itself only where no loop of the user's can be ended (see ``ending``).

The user's code (the main script and the modules under its folder or the working
directory, never installed packages) is compiled with a check at each loop head
(``transform``) by ``quickdev.rewrite``: file names and line numbers stay the user's.
What that means for the corners of the language:

- ``for … else`` / ``while … else``: a loop ended early skips its ``else``, as a ``break``
  does (it did not run out).
- Generators and ``async for``: their loops are rewritten like any other; a generator
  suspended at ``yield`` is not on the stack, so only the loop consuming it is ended (and
  the generator with it, once it is dropped).
- Comprehensions cannot ``break``: they run as written, and a budget reached inside one
  stops the script as before.
- ``try/except Exception`` and ``finally`` around a loop: ending it is a ``break``, not an
  exception: no handler runs, ``finally`` does, as the script wrote.
- A loop in a function that library code calls (a callback) is ended like any other; if
  the library keeps calling it, the job stops the script once the budget is overrun.
- Code that was imported before the job started (the in-process API) or that cannot be
  parsed runs as written (one line in the job's log).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable

from quickdev.cachedir import quickdev_cache_dir
from quickdev.limits.budget import Budget
from quickdev.limits.loops.ending import LoopEnder
from quickdev.limits.loops.table import LoopTables
from quickdev.limits.loops.transform import LoopExits
from quickdev.limits.patching import Patcher
from quickdev.limits.user_code import is_user_file
from quickdev.rewrite import Rewriter, install_import_hook
from quickdev.rewrite.cache import CodeCache

__all__ = ["LoopEnder", "LoopExits", "LoopTables", "install", "project_files"]

log = logging.getLogger(__name__)

CACHE_DIR_NAME = "rewrite"


def install(
    patcher: Patcher, budget: Budget, roots: Iterable[str]
) -> tuple[LoopEnder, Rewriter | None]:
    """The loop ender the recorder reports budgets to, and the rewriter for the main
    script (None when no budget ends loops: the code runs as written)."""
    tables = LoopTables()
    ender = LoopEnder(tables)
    if not budget.ends_loops():
        return ender, None
    cache = CodeCache(quickdev_cache_dir(CACHE_DIR_NAME))
    rewriter = Rewriter([LoopExits(tables)], cache)
    patcher.on_undo(lambda: _log_cost(rewriter))
    patcher.on_undo(install_import_hook(rewriter, project_files(roots)))
    return ender, rewriter


def _log_cost(rewriter: Rewriter) -> None:
    stats = rewriter.stats
    log.info(
        "loop exits: %d file(s) rewritten, %d from the cache, %d as written, in %.1f ms",
        stats.rewritten,
        stats.cached,
        stats.as_written,
        stats.seconds * 1000,
    )


def project_files(roots: Iterable[str]) -> Callable[[str], bool]:
    """Whether a module's file is the user's own: under one of ``roots`` (the script's
    folder, the working directory) and not an installed library's."""
    prefixes = tuple(
        dict.fromkeys(os.path.realpath(root).rstrip(os.sep) + os.sep for root in roots)
    )

    def wanted(path: str) -> bool:
        real = os.path.realpath(path)
        return real.startswith(prefixes) and is_user_file(real)

    return wanted
