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
from types import FrameType

from quickdev.limits.loops.marks import Marks, Place, places, running_frames, stack_ids
from quickdev.limits.loops.table import Loop, LoopTables
from quickdev.limits.stop import StopJob
from quickdev.rundir.option_table import EVAL_FORWARDS, MAX_STEPS, TRAIN_PASSES
from quickdev.rundir.result import EndedLoop

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
        self._mark(inner, loop, "training", budget, since, "steps")
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
            for place, outer in around:
                if role == "epoch":
                    self._mark(place, outer, role, budget, runs, "passes")
                else:
                    self._mark(place, outer, role, budget, since, "steps")
                role = "enclosing"
        return True

    # --- evaluation forwards ---------------------------------------------------------

    def evaluation_forward(self, in_a_row: int, since: int, limit: int) -> bool:
        """Before an evaluation forward; ``in_a_row`` counts it, and ``since`` the forwards
        since the last evaluation loop ended (the budget counts both). Ends the evaluation
        loop at ``limit`` forwards since the last one ended, and says so (True); raises where
        it cannot."""
        if in_a_row > EVAL_OVERRUN * limit:
            raise StopJob(EVAL_FORWARDS)
        self._refresh()
        waiting = any(m.ended.budget == EVAL_FORWARDS for m in self.marks.pending)
        if since < limit and not waiting:
            return False
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
        self._mark(inner, loop, "evaluation", EVAL_FORWARDS, since, "forwards")
        if self._eval_ended_in.get(_eval_key(inner.frame, loop)) is inner.frame:
            self._end_around(found, EVAL_FORWARDS, since)
        return True

    def _end_around(self, found: list[Place], budget: str, count: int) -> None:
        """Also end the loop around the innermost one (in its frame, else further out)."""
        inner = found[0]
        if len(inner.loops) > 1:
            self._mark(inner, inner.loops[1], "enclosing", budget, count, "forwards")
        elif len(found) > 1:
            self._mark(found[1], found[1].loops[0], "enclosing", budget, count, "forwards")

    # --- passes over the training loader ---------------------------------------------

    def where_pass_starts(self) -> tuple[Place, ...]:
        """The user's loops around a pass that is starting, for ``training_pass_ended``."""
        return tuple(_loops_here(self.tables))

    def training_pass_ended(self, started: tuple[Place, ...], passes: int) -> None:
        """A pass that trained ended and the loader has ``passes`` such passes, the budget
        or more: end the loops around where the pass began (the epoch loop and those
        around it), but not the loop that iterated the loader (it is done)."""
        self._refresh()
        live = stack_ids()
        role = "epoch"
        for place in started:
            if id(place.frame) not in live:
                continue
            for loop in place.loops:
                if loop.drives(place.line) or self.marks.find(place.frame, loop) is not None:
                    continue
                self._mark(place, loop, role, TRAIN_PASSES, passes, "passes")
                role = "enclosing"
                self._passes_ended = True

    def training_in_extra_pass(self, passes: int, limit: int) -> None:
        """A training forward in a pass beyond the budget: a later training phase may take
        one more pass (its loops end after it); otherwise the script is stopped."""
        self._refresh()
        pending = self.marks.on_stack(TRAIN_PASSES)
        if not self._passes_ended or pending or passes >= OVERRUN * limit:
            raise StopJob(TRAIN_PASSES)

    # ---------------------------------------------------------------------------------

    def _mark(
        self, place: Place, loop: Loop, role: str, budget: str, count: int, unit: str
    ) -> None:
        if self.marks.find(place.frame, loop) is not None:
            return
        ended = EndedLoop(
            file=place.frame.f_code.co_filename,
            line=loop.line,
            role=role,
            budget=budget,
            count=count,
            unit=unit,
        )
        self.marks.add(place.frame, loop, ended, place.line)

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


def _eval_key(frame: FrameType, loop: Loop) -> tuple[str, int]:
    """An evaluation loop, as ``_eval_ended_in`` knows it."""
    return (frame.f_code.co_filename, loop.index)


def _loops_here(tables: LoopTables) -> list[Place]:
    """The user's loops around the running code; empty when the innermost user code
    running is a comprehension (it cannot be ended) or there is no loop."""
    found = places(tables, sys._getframe(2))
    return found if found and found[0].loops else []
