"""The job's limits and their enforcement: one ``Budget`` per process of the job.

Its values are the option table's limits (``rundir/option_table.py``) with their defaults
decided once (``Budget.for_options``); result.json's ``limits`` are the same values, so what
changes while the job runs (a script's own ``--epochs N``, a debugger lifting the wall
clock) is what the result says.

The ``Recorder`` counts steps, passes and forwards where the limits see them and tells the
budget; the budget decides. A budget reached ends the user's loops around that point and
the script goes on (``quickdev.limits.loops``); where no loop can be ended, and for the wall
clock, the job stops the script by raising ``StopJob``, named by the budget's
``stop_reason``. The job's signal handling (alarm, kill, hard stop) lives in
``quickdev.job.signals``.

Every loop style meets one of them: DataLoader epochs (``train_passes``, also an endless
trainer that re-iterates its loader), hand-made batches (``loop_steps``), evaluation
loops without a DataLoader (``eval_forwards``), anything else (``timeout``).
"""

from __future__ import annotations

import time
from typing import Any

from quickdev.limits.loops import LoopEnder, LoopTables
from quickdev.limits.loops.marks import Place
from quickdev.limits.stop import NONFINITE, StopJob
from quickdev.limits.work_clock import busy_seconds
from quickdev.options import RunOptions, limit_value, step_cost_bound
from quickdev.rundir import option_table
from quickdev.rundir.option_table import (
    BATCHES,
    EVAL_FORWARDS,
    HUNT_STEPS,
    LOOP_STEPS,
    MAX_STEPS,
    STEP_SECONDS,
    TIMEOUT,
    TRAIN_PASSES,
    Value,
)
from quickdev.rundir.result import Limits

# The stop reasons: each budget's name in the option table.
__all__ = [
    "EVAL_FORWARDS",
    "LOOP_STEPS",
    "MAX_STEPS",
    "NONFINITE",
    "TIMEOUT",
    "TRAIN_PASSES",
    "Budget",
    "StopJob",
]


class Budget:
    """The limits of one process of the job (None: no bound) and the checks against them."""

    def __init__(
        self,
        values: dict[str, Value | None],
        *,
        batches_bound_training: bool = True,
        eval_seconds: float | None = None,
        eval_at_least: int = 1,
    ) -> None:
        self.values = values
        # False in the NaN hunt: a pass that takes training steps runs past --batches, so the
        # step budget (not one epoch of two batches) decides how long the hunt trains.
        self.batches_bound_training = batches_bound_training
        # An evaluation loop without a DataLoader that the job can end also ends once its
        # forwards have run this many seconds, after ``eval_at_least`` of them (None: by count
        # only): full-size evaluation forwards are what a job spends its seconds on.
        self.eval_seconds = eval_seconds
        self.eval_at_least = eval_at_least
        self.deadline: float | None = None
        # Ends the user's loops; one without rewritten loops (the job stops the script, as
        # for code it did not compile) until the limits give it theirs.
        self.loops = LoopEnder(LoopTables())
        # Set by leave_steps_to_trainer(): a trainer that stops at max_steps by itself.
        self._trainer_counts_steps = False
        self._counted_afresh()

    def _counted_afresh(self) -> None:
        """The state the budget keeps of the counts: a process starts it afresh."""
        self._passes_beyond = 0  # open DataLoader passes past the train_passes budget
        # A hand-written SGD step reached a step budget with no loop to end: the next step
        # must not start.
        self._stop_before_step: str | None = None
        # Evaluation forwards in a row (no step or DataLoader batch between), and of those
        # the ones since the last evaluation loop the budget ended.
        self._evals_in_a_row = 0
        self._evals_since_ended = 0
        self._eval_started = 0.0  # when the forwards since then began (busy_seconds)

    @classmethod
    def for_options(cls, options: RunOptions) -> Budget:
        """The one place the limits' defaults are decided: each limit's default in the
        option table, and the rules beside it.

        ``--no-limits`` keeps only what was asked for explicitly (and never bounds batches);
        a debug job gets no default wall clock (a person stepping through code is not a
        runaway loop). A hand-made batch is a batch, so loops without a DataLoader make
        ``--batches`` steps unless ``--max-steps`` asks for more. The NaN hunt trains for its
        step budget: epochs are not cut to one pass, and loops without a DataLoader get as
        many steps. ``step_seconds`` follows its own rule (``step_cost_bound``). An
        evaluation loop without a DataLoader runs ``--eval-forwards`` forwards, or, where the
        job can end it, the step-cost bound's seconds (at least ``--batches`` forwards):
        nanoGPT's evaluation spent most of a job's time on 40 full-size forwards
        (docs/step-cost.md). An explicit ``--eval-forwards`` is a count.
        """
        given = options.limits
        hunting = options.find_nonfinite
        defaults = {limit.name: limit.default for limit in option_table.LIMITS}
        if options.listen is not None or options.wait_for_client:
            defaults[TIMEOUT] = None
        if hunting:
            defaults[MAX_STEPS] = HUNT_STEPS
            defaults[TRAIN_PASSES] = None
        values: dict[str, Value | None] = {}
        for limit in option_table.LIMITS:
            if limit.name in given:
                values[limit.name] = given[limit.name] or None  # 0 switches it off
            elif limit.name == LOOP_STEPS:  # after both in the table
                values[limit.name] = values[MAX_STEPS] or values[BATCHES]
            else:
                values[limit.name] = defaults[limit.name]
            if options.no_limits and (limit.name not in given or limit.name == BATCHES):
                values[limit.name] = None
        values[STEP_SECONDS] = step_cost_bound(options)
        return cls(
            values,
            batches_bound_training=not hunting,
            eval_seconds=None if EVAL_FORWARDS in given else values[STEP_SECONDS],
            eval_at_least=int(limit_value(options, BATCHES)),
        )

    def result_limits(self, options: RunOptions) -> Limits:
        """result.json's ``limits``: this budget's values themselves, not a copy."""
        return Limits(
            values=self.values, device=options.device, find_nonfinite=options.find_nonfinite
        )

    def to_dict(self) -> dict[str, Any]:
        """The budget as it is now (a script's own epoch count may have set
        ``train_passes``), for a process the job starts; its deadline is on one clock
        (``time.monotonic``) for all processes."""
        return {
            "values": self.values,
            "batches_bound_training": self.batches_bound_training,
            "eval_seconds": self.eval_seconds,
            "eval_at_least": self.eval_at_least,
            "deadline": self.deadline,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Budget:
        budget = cls(
            dict(data["values"]),
            batches_bound_training=data["batches_bound_training"],
            eval_seconds=data.get("eval_seconds"),
            eval_at_least=data.get("eval_at_least", 1),
        )
        deadline = data.get("deadline")
        budget.deadline = float(deadline) if deadline is not None else None
        return budget

    # --- the values ------------------------------------------------------------------

    def _whole(self, name: str) -> int | None:
        value = self.values.get(name)
        return None if value is None else int(value)

    @property
    def batches(self) -> int | None:
        return self._whole(BATCHES)

    @property
    def max_steps(self) -> int | None:
        return self._whole(MAX_STEPS)

    @property
    def timeout_s(self) -> float | None:
        value = self.values.get(TIMEOUT)
        return None if value is None else float(value)

    @property
    def train_passes(self) -> int | None:
        return self._whole(TRAIN_PASSES)

    def start(self) -> None:
        if self.timeout_s is not None:
            self.deadline = time.monotonic() + self.timeout_s

    def ends_loops(self) -> bool:
        """Whether a budget may end the user's loops (then their code is rewritten)."""
        names = (MAX_STEPS, TRAIN_PASSES, LOOP_STEPS, EVAL_FORWARDS)
        return any(self.values.get(name) is not None for name in names)

    def allow_epochs(self, epochs: int) -> None:
        """The user asked the script for this many epochs on its command line."""
        passes = self.train_passes
        if passes is not None and epochs > passes:
            self.values[TRAIN_PASSES] = epochs

    def leave_steps_to_trainer(self) -> None:
        """A trainer (Lightning) was given ``max_steps`` and ends there gracefully, running
        its end-of-training work; the step hook must then not stop the job first."""
        self._trainer_counts_steps = True

    def lift_deadline(self) -> None:
        """No wall clock from now on (a debugger attached); the hard stop reads it too."""
        self.values[TIMEOUT] = None
        self.deadline = None

    # --- the checks ------------------------------------------------------------------

    def check_time(self) -> None:
        """Backstop for jobs off the main thread, where no alarm signal can be used."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise StopJob(TIMEOUT)

    def step_budget_reached(
        self, steps: int, loop_steps: int | None
    ) -> tuple[str, int, int] | None:
        """(budget, its count, its limit) of the step budget the counts reached, if any;
        ``loop_steps`` is None for a step that took a DataLoader batch."""
        max_steps, loop_limit = self.max_steps, self._whole(LOOP_STEPS)
        if max_steps is not None and self._max_steps_reached(steps):
            return MAX_STEPS, steps, max_steps
        if loop_limit is not None and loop_steps is not None and loop_steps >= loop_limit:
            return LOOP_STEPS, loop_steps, loop_limit
        return None

    def steps_spent(self, steps: int, loop_steps: int | None) -> bool:
        """Whether another step would be one too many, without stopping anything (a
        closure optimizer's step asks before each pass); ``loop_steps``: None when the
        step takes a DataLoader batch."""
        return self.step_budget_reached(steps, loop_steps) is not None

    def _max_steps_reached(self, steps: int) -> bool:
        max_steps = self.max_steps
        return max_steps is not None and steps >= max_steps and not self._trainer_counts_steps

    def beyond_train_passes(self, training_passes: int) -> bool:
        """Whether another pass over a loader that ``training_passes`` passes trained from
        would be one epoch too many, should it train (see ``training_forward``)."""
        passes = self.train_passes
        return passes is not None and training_passes >= passes

    # --- what the recorder counted -----------------------------------------------------

    def restart(self) -> None:
        """In a child process forked from the job: its counts start afresh (the loops the
        job ended stay known)."""
        self._counted_afresh()

    def pass_starting(self, training_passes: int) -> tuple[bool, tuple[Place, ...]]:
        """A pass begins over a loader ``training_passes`` passes trained from: whether it
        is beyond the train_passes budget, and where the user's loops are.

        A pass beyond the budget may still run: a script that measures its training
        accuracy over the training loader after training takes no step there. The loops
        around a training pass end once it reaches the budget (the epoch loop ends before
        its next pass); a training forward in a pass beyond it stops the job where that
        did not happen (see ``LoopEnder.training_in_extra_pass``)."""
        beyond = self.beyond_train_passes(training_passes)
        self._passes_beyond += beyond
        where = self.loops.where_pass_starts() if self.train_passes is not None else ()
        return beyond, where

    def pass_ended(self, beyond: bool) -> None:
        """A pass ended that ``pass_starting`` said was ``beyond`` the budget, or not."""
        self._passes_beyond -= beyond

    def pass_trained(self, where: tuple[Place, ...], passes: int) -> None:
        """A pass that began ``where`` trained (its loader has trained ``passes`` passes,
        this one counted): at the budget, the loops around where it began end."""
        if self.beyond_train_passes(passes):
            self.loops.training_pass_ended(where, passes)

    def training_forward(self, most_passes: int) -> None:
        """Before a training forward; ``most_passes``: the most passes any loader trained."""
        if self._passes_beyond:
            limit = self.train_passes
            if limit is None:
                raise StopJob(TRAIN_PASSES)
            self.loops.training_in_extra_pass(most_passes, limit)

    def batch_taken(self) -> None:
        """A DataLoader batch: an evaluation forward after it starts a new row."""
        self._evals_in_a_row = self._evals_since_ended = 0
        self.check_time()

    def step_counted(self) -> None:
        """A training step: an evaluation forward after it starts a new row."""
        self._evals_in_a_row = self._evals_since_ended = 0

    def step_taken(self, steps: int, loop_steps: int | None, *, hand_written: bool) -> None:
        """After a counted step (``loop_steps``: None for one that took a DataLoader batch):
        a step budget reached ends the loops around it. Where none can be ended the job
        stops: after this optimizer step, or before the next hand-written one (whose
        forward is where it was counted)."""
        reached = self.step_budget_reached(steps, loop_steps)
        if reached is None or self.loops.training_step(*reached, self.train_passes):
            return
        if hand_written:
            self._stop_before_step = reached[0]
            return
        raise StopJob(reached[0])

    def hand_step_starting(self) -> None:
        """Before a hand-written SGD step (a training forward) is counted."""
        if self._stop_before_step is not None:
            raise StopJob(self._stop_before_step)

    def eval_forward(self) -> None:
        """Before a forward of the model in eval mode or without grad: an evaluation loop
        that no DataLoader bounds ends after the eval_forwards budget, or its seconds."""
        self._evals_in_a_row += 1
        self._evals_since_ended += 1
        limit = self._whole(EVAL_FORWARDS)
        if limit is None:
            return
        since, seconds = self._evals_since_ended, self.eval_seconds
        if seconds is not None and since == 1:
            self._eval_started = busy_seconds()  # each loop timed from its first forward
        if self._evals_in_a_row < limit and not self.loops.busy() and seconds is None:
            return
        # Seconds of work, as they would pass on this machine unloaded: the same script's
        # loop ends at the same forward on a busy machine as on a quiet one.
        spent = (
            seconds is not None
            and since >= self.eval_at_least
            and busy_seconds() - self._eval_started > seconds
        )
        if self.loops.evaluation_forward(self._evals_in_a_row, since, limit, spent):
            self._evals_since_ended = 0

    def finish(self) -> None:
        """The script is done: record what ended, tell nothing more to end."""
        self.loops.finish()
