"""Every phase of the script runs: a budget ends the user's loops, not the script.

When a budget is reached (steps, evaluation forwards, passes over the training loader)
the loops around that point are told to end at their next iteration, and the script goes
on after them: validation, test, the final checkpoint, the export all run. The job stops
the script itself only where no loop of the user's can be ended (see ``ending``).

The user's code (the main script and the modules under its folder or the working
directory, never installed packages) is compiled with a check at each loop head
(``transform``) by the job's rewriter (``quickdev.limits.job_rewriter``): file names and
line numbers stay the user's.
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
- A loop ends once it goes round again: its variable then holds the item it did not run
  (``epoch`` is 1 after epoch 0), a DataLoader loop has read one more batch, and a loop
  that would have ended anyway (its last item, its condition false) is not reported.
- Modules imported before the job (by the caller of the in-process API), a function
  compiled from its bytecode (numba's ``@njit``) and a file that cannot be parsed run as
  written (a file that fails: one line in the job's log). The in-process API leaves the
  modules it rewrote rewritten, their flags (builtins, None) defined.
"""

from __future__ import annotations

from quickdev.limits.loops.ending import LoopEnder
from quickdev.limits.loops.table import LoopTables
from quickdev.limits.loops.transform import LoopExits

__all__ = ["LoopEnder", "LoopExits", "LoopTables", "install"]


def install(ends_loops: bool) -> tuple[LoopEnder, LoopExits | None]:
    """The loop ender the budget ends loops with, and the transform that gives the user's
    loops their exits (None when no budget ends loops: they run as written). The transform
    is compiled in by the job's one rewriter (``quickdev.limits.job_rewriter``)."""
    tables = LoopTables()
    ender = LoopEnder(tables)
    return ender, LoopExits(tables) if ends_loops else None
