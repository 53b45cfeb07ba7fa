"""Which loops a budget ends, and when the job has to stop the script after all.

- ``max_steps`` ends every loop around the step: the loop taking the steps, then each
  loop around it, in every frame of the user's code. ``loop_steps`` ends the loop taking
  hand-made batches each time it has taken its budget (as ``--batches`` ends each pass
  over a DataLoader), and the loops around it once it has run its epochs.
- ``eval_forwards`` ends the innermost loop around the forward (the evaluation loop) and
  the script goes on with what it computed; the same loop ended again in the same frame
  (nanoGPT's ``for split in ["train", "val"]``) also ends the loop around it.
- ``train_passes`` ends, once a pass over the training loader ends, the loops around
  where that pass began, not the loop that iterated the loader: the epoch loop ends
  before its next pass.

The job stops the script (``StopJob``, status ``stopped``) where no loop can be ended:
no rewritten loop around the point (library code, a comprehension); the same step again
from the same line while its loop was told to end (a loop inside it that is not the
user's); a budget overrun by far (twice the steps, twice the passes, ten times the
evaluation forwards in a row), which bounds loops that a library keeps calling.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType

from quickdev.limits.loops import library
from quickdev.limits.loops.marks import (
    Marks,
    Place,
    add_ended,
    places,
    running_frames,
    stack_ids,
)
from quickdev.limits.loops.table import Loop, LoopTables
from quickdev.limits.stop import StopJob
from quickdev.rundir.option_table import EVAL_FORWARDS, MAX_STEPS, TRAIN_PASSES
from quickdev.rundir.result import EndedLoop
from quickdev.rundir.shapes import Cut

# How far past a budget the job lets the script go while the loops it ended are still
# running (a loop it cannot reach keeps taking steps) before it stops the script.
OVERRUN = 2
EVAL_OVERRUN = 10


class LoopEnder:
    def __init__(self, tables: LoopTables) -> None:
        self.tables = tables
        self.marks = Marks()
        self._steps_ended: dict[str, int] = {}  # a step budget's count when it last ended loops
        # An evaluation loop -> the frame it last ended in, while that frame runs: dropped
        # at the first refresh after it returned, not to keep the user's objects alive.
        self._eval_ended_in: dict[tuple[str, int], FrameType] = {}
        self._passes_ended = False
        self._training_runs: dict[tuple[str, int], int] = {}  # loop -> times a step budget ended it
        self.library = library.LibraryEnder()  # a library's loop told to end (one at a time)
        # Told of each loop told to end, with its frame (the tensor-shape recording marks
        # what was being made from it as cut short).
        self.on_end: Callable[[FrameType, int, Cut], None] | None = None

    @property
    def ended(self) -> list[EndedLoop]:
        self.marks.refresh()
        return self.marks.ended

    def busy(self) -> bool:
        """Whether a loop was told to end and has not yet (cheap: no stack walk)."""
        return bool(self.marks.pending)

    def finish(self) -> None:
        """The script is done: record what ended, tell nothing more to end."""
        self.marks.refresh()
        self.marks.withdraw_all()
        self.library.disarm()

    # --- step budgets ----------------------------------------------------------------

    def training_step(self, budget: str, count: int, limit: int, epochs: int | None) -> bool:
        """A step was counted and ``count`` reached ``limit``. False when no loop can be
        ended (the caller stops the script).

        ``max_steps`` is the whole job's: it ends the loop taking the steps and every loop
        around it, and a later training loop after its first step. ``loop_steps`` bounds
        each run of a loop over hand-made batches, as ``--batches`` bounds each pass over a
        DataLoader: the loops around it end once it has run ``epochs`` times (an explicit
        ``--epochs N`` of the script gives N)."""
        self._refresh()
        since = count - self._steps_ended.get(budget, 0)
        # Told to end, and the steps went on (a whole job's budget counts them all).
        if (count if budget == MAX_STEPS else since) > OVERRUN * limit:
            raise StopJob(budget)
        found = _loops_here(self.tables)
        if found:
            inner = found[0]
            mark = self.marks.find(inner.frame, inner.loops[0])
            if mark is not None:
                # Finishing the iteration it was told to end after: another step on another
                # line (a second optimizer) is fine; the same line again is a loop inside it
                # that cannot be ended, repeating the step.
                if inner.line == mark.line:
                    raise StopJob(budget)
                return True
        if budget != MAX_STEPS and since < limit:
            return True  # a new run of the loop, within its budget
        if not found:
            return False
        self._steps_ended[budget] = count
        inner = found[0]
        loop = inner.loops[0]
        first = self._mark(inner, loop, "training", budget, since, "steps")
        key = (inner.frame.f_code.co_filename, loop.index)
        runs = self._training_runs[key] = self._training_runs.get(key, 0) + 1
        if budget == MAX_STEPS or (epochs is not None and runs >= epochs):
            around = [
                (place, outer)
                for place in found
                for outer in place.loops
                if not (place is inner and outer is loop)
            ]
            if not around and epochs is not None and runs > epochs:
                raise StopJob(budget)  # run again past its epochs, with nothing around to end
            # Its epoch loop (the loop around it, for loop_steps), then the others.
            role = "enclosing" if budget == MAX_STEPS else "epoch"
            inside = first  # each loop ended names the one ended inside it
            for place, outer in around:
                if role == "epoch":
                    inside = self._mark(place, outer, role, budget, runs, "passes")
                else:
                    inside = self._mark(place, outer, role, budget, since, "steps", inside)
                role = "enclosing"
        return True

    # --- evaluation forwards ---------------------------------------------------------

    def evaluation_forward(
        self, in_a_row: int, since: int, limit: int, seconds_spent: bool = False
    ) -> bool:
        """Before an evaluation forward; ``in_a_row`` counts it, and ``since`` the forwards
        since the last evaluation loop ended (the budget counts both). Ends the evaluation
        loop at ``limit`` forwards since the last one ended, and says so (True); raises where
        it cannot. ``seconds_spent``: the loop has run its seconds (the budget times it), so
        it is ended now where it can be; one that cannot goes on to ``limit``."""
        if in_a_row > EVAL_OVERRUN * limit:
            raise StopJob(EVAL_FORWARDS)
        if seconds_spent:
            limit = min(limit, since)  # its seconds are spent: as if its count were
        self._refresh()
        waiting = self.library.armed is not None or any(
            m.ended.budget == EVAL_FORWARDS for m in self.marks.pending
        )
        if since < limit and not waiting:
            return False
        around = library.innermost(sys._getframe(1), self.tables.has_file)
        if around is not None:
            ended = self._library_forward(*around, since, limit)
            if ended is not None:
                return ended
        found = _loops_here(self.tables)
        if not found:
            if since > limit:
                raise StopJob(EVAL_FORWARDS)  # the forward after the last one allowed
            return False
        inner = found[0]
        loop = inner.loops[0]
        if self.marks.find(inner.frame, loop) is not None:
            if since > limit:
                raise StopJob(EVAL_FORWARDS)  # told to end, and it went on
            return False
        if since < limit:
            return False
        role = _evaluation_role(inner.frame.f_code.co_name)
        first = self._mark(inner, loop, role, EVAL_FORWARDS, since, "forwards")
        if self._eval_ended_in.get(_eval_key(inner.frame, loop)) is inner.frame:
            self._end_around(found, EVAL_FORWARDS, since, first)
        return True

    def _library_forward(
        self, frame: FrameType, loop: library.LibraryLoop, since: int, limit: int
    ) -> bool | None:
        """An evaluation forward inside a library's loop (diffusion sampling, a
        ``generate()``): ends that loop at its head after ``limit`` forwards (True), or lets
        it go on within the budget (False). None where it cannot: the user's loops are then
        ended, or the script stopped, as for any code the job cannot end."""
        armed = self.library.armed
        if armed is not None:
            # Told to end and not yet at its head: within the budget it finishes the round.
            return False if armed == (id(frame), loop) and since <= limit else None
        if since < limit:
            return False
        ended = EndedLoop(
            loop.file,
            loop.line,
            _evaluation_role(loop.function),
            EVAL_FORWARDS,
            since,
            "forwards",
            library=True,
        )
        users = _loops_here(self.tables)  # the user's loops around the library's call
        key = (loop.file, -loop.line)

        def jumped() -> None:
            add_ended(self.marks.ended, ended)
            if users and self._eval_ended_in.get(key) is users[0].frame:
                # Ended again from the same frame: the user's loop around the call ends too.
                outer = users[0].loops[0]
                where = f"{loop.file}:{loop.line}"
                self._mark(users[0], outer, "enclosing", EVAL_FORWARDS, since, "forwards", where)
            if users:
                self._eval_ended_in[key] = users[0].frame

        if not self.library.end(frame, loop, jumped):
            return None
        if self.on_end is not None:  # what the user's code makes of what the loop returns
            self.on_end(
                frame, loop.line, Cut(loop.file, loop.line, EVAL_FORWARDS, since, "forwards")
            )
        return True

    def _end_around(self, found: list[Place], budget: str, count: int, first: str) -> None:
        """Also end the loop around the innermost one (in its frame, else further out)."""
        inner = found[0]
        if len(inner.loops) > 1:
            self._mark(inner, inner.loops[1], "enclosing", budget, count, "forwards", first)
        elif len(found) > 1:
            outer = found[1].loops[0]
            self._mark(found[1], outer, "enclosing", budget, count, "forwards", first)

    # --- passes over the training loader ---------------------------------------------

    def where_pass_starts(self) -> tuple[Place, ...]:
        """The user's loops around a pass that is starting, for ``training_pass_ended``."""
        return tuple(_loops_here(self.tables))

    def training_pass_ended(self, started: tuple[Place, ...], passes: int) -> None:
        """A pass that trained ended and the loader has ``passes`` such passes, the budget
        or more: end the loops around where the pass began (the epoch loop and those
        around it), but not the loop that iterated the loader (it is done), nor a
        generator's (lucidrains' ``cycle(dl)``): a generator that ended would raise
        StopIteration at its consumer's ``next()``; its consumer's loops end. The innermost
        loop, where it asked for the pass's first batch in its body (``next(it)``, not a
        ``for`` over the loader), takes a batch per iteration: it is the training loop."""
        self._refresh()
        live = stack_ids()
        inside: str | None = None  # the loop ended last: the next one is around it
        around = [p for p in started if id(p.frame) in live and not _generator(p.frame)]
        for place in around:
            for loop in place.loops:
                if loop.drives(place.line) or self.marks.find(place.frame, loop) is not None:
                    continue
                if inside is None:
                    fetches = place is around[0] and loop is place.loops[0]
                    role = "training" if fetches else "epoch"
                else:
                    role = "enclosing"
                inside = self._mark(place, loop, role, TRAIN_PASSES, passes, "passes", inside)
                self._passes_ended = True

    def training_in_extra_pass(self, passes: int, limit: int) -> None:
        """A training forward in a pass beyond the budget. Allowed once the loops around
        the training were told to end: an endless trainer that re-iterates its loader in
        the iteration it was told to end after (makemore's ``InfiniteDataLoader``,
        minGPT's ``except StopIteration: data_iter = iter(loader)``) trains on that batch
        and its loop ends at its head; a later training phase may take one more pass.
        Stopped where no loop was ended, and once the passes overrun the budget (a loop
        the job cannot reach keeps iterating the loader)."""
        if not self._passes_ended or passes >= OVERRUN * limit:
            raise StopJob(TRAIN_PASSES)

    # ---------------------------------------------------------------------------------

    def _mark(
        self,
        place: Place,
        loop: Loop,
        role: str,
        budget: str,
        count: int,
        unit: str,
        around: str | None = None,
    ) -> str:
        """Tell ``loop`` to end in ``place``'s frame; returns it as ``file:line`` (what a
        loop around it names as the loop it is ``around``)."""
        file = place.frame.f_code.co_filename
        if self.marks.find(place.frame, loop) is None:
            ended = EndedLoop(file, loop.line, role, budget, count, unit, around=around)
            self.marks.add(place.frame, loop, ended, place.line)
            if self.on_end is not None:
                self.on_end(place.frame, loop.line, Cut(file, loop.line, budget, count, unit))
        return f"{file}:{loop.line}"

    def _refresh(self) -> None:
        if not self.marks.pending and not self._eval_ended_in:
            return
        running = running_frames(2)  # one walk of the stack for both
        for mark in self.marks.refresh(running):
            frame = running.get(mark.frame_id)
            if mark.ended.budget == EVAL_FORWARDS and frame is not None:
                self._eval_ended_in[_eval_key(frame, mark.loop)] = frame
        for key, frame in list(self._eval_ended_in.items()):
            if id(frame) not in running:
                del self._eval_ended_in[key]


# A generator's frame: ending its loop ends the generator.
_GENERATOR = 0x20 | 0x200  # CO_GENERATOR | CO_ASYNC_GENERATOR


def _generator(frame: FrameType) -> bool:
    return bool(frame.f_code.co_flags & _GENERATOR)


def _evaluation_role(function: str) -> str:
    """How a loop of forwards without training is named: sampling (``generate``,
    ``p_sample_loop``) or evaluation."""
    return "sampling" if library.is_sampling(function) else "evaluation"


def _eval_key(frame: FrameType, loop: Loop) -> tuple[str, int]:
    """An evaluation loop, as ``_eval_ended_in`` knows it."""
    return (frame.f_code.co_filename, loop.index)


def _loops_here(tables: LoopTables) -> list[Place]:
    """The user's loops around the running code; empty when the innermost user code
    running is a comprehension (it cannot be ended) or there is no loop."""
    found = places(tables, sys._getframe(2))
    return found if found and found[0].loops else []
