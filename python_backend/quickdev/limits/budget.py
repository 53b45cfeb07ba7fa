"""The budgets a job's limits enforce, each named by the ``stop_reason`` it gives.

The limits count steps, passes and forwards in the user's process, so they check the
budget where they count. A budget reached ends the user's loops around that point and the
script goes on (``quickdev.limits.loops``); where no loop can be ended, and for the wall
clock, the job stops the script by raising ``StopJob``. The job's signal handling (alarm,
kill, hard stop) lives in ``quickdev.job.signals``. ``StopJob`` derives from BaseException
so that a user's ``except Exception`` around the training loop cannot swallow it.

Every loop style meets one of them: DataLoader epochs (``train_passes``, also an endless
trainer that re-iterates its loader), hand-made batches (``loop_steps``), evaluation
loops without a DataLoader (``eval_forwards``), anything else (``timeout``).
"""

from __future__ import annotations

import time

from quickdev.options import Budgets
from quickdev.rundir.option_table import (
    BATCHES,
    EVAL_FORWARDS,
    LOOP_STEPS,
    MAX_STEPS,
    TIMEOUT,
    TRAIN_PASSES,
    Value,
)

# stop_reason values, one per budget: its name in the option table (rundir/option_table.py).
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
# Not a budget: the NaN hunt found the first non-finite value (limits/nonfinite).
NONFINITE = "nonfinite"


class StopJob(BaseException):
    """A budget ran out; the job ends as ``stopped`` with this reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Budget:
    """The budgets of one job and the checks against them."""

    def __init__(self, budgets: Budgets) -> None:
        values = budgets.values
        self.batches = _whole(values.get(BATCHES))
        self.max_steps = _whole(values.get(MAX_STEPS))
        self.timeout_s = _seconds(values.get(TIMEOUT))
        self.train_passes = _whole(values.get(TRAIN_PASSES))
        self.loop_steps = _whole(values.get(LOOP_STEPS))
        self.eval_forwards = _whole(values.get(EVAL_FORWARDS))
        self.batches_bound_training = budgets.batches_bound_training
        self.deadline: float | None = None
        # Set by leave_steps_to_trainer(): a trainer that stops at max_steps by itself.
        self._trainer_counts_steps = False

    def budgets(self) -> Budgets:
        """The budgets as they are now (a script's own epoch count may have set
        ``train_passes``): what a process the job starts runs under."""
        values: dict[str, Value | None] = {
            BATCHES: self.batches,
            MAX_STEPS: self.max_steps,
            TIMEOUT: self.timeout_s,
            TRAIN_PASSES: self.train_passes,
            LOOP_STEPS: self.loop_steps,
            EVAL_FORWARDS: self.eval_forwards,
        }
        return Budgets(values, batches_bound_training=self.batches_bound_training)

    def start(self) -> None:
        if self.timeout_s is not None:
            self.deadline = time.monotonic() + self.timeout_s

    def ends_loops(self) -> bool:
        """Whether a budget may end the user's loops (then their code is rewritten)."""
        limits = (self.max_steps, self.train_passes, self.loop_steps, self.eval_forwards)
        return any(limit is not None for limit in limits)

    def step_budget_reached(
        self, steps: int, loop_steps: int | None
    ) -> tuple[str, int, int] | None:
        """(budget, its count, its limit) of the step budget the counts reached, if any;
        ``loop_steps`` is None for a step that took a DataLoader batch."""
        if self.max_steps is not None and self._max_steps_reached(steps):
            return MAX_STEPS, steps, self.max_steps
        if (
            self.loop_steps is not None
            and loop_steps is not None
            and self._loop_steps_reached(loop_steps)
        ):
            return LOOP_STEPS, loop_steps, self.loop_steps
        return None

    def steps_spent(self, steps: int, loop_steps: int | None) -> bool:
        """Whether another step would be one too many, without stopping anything (a
        closure optimizer's step asks before each pass); ``loop_steps``: None when the
        step takes a DataLoader batch."""
        return self._max_steps_reached(steps) or (
            loop_steps is not None and self._loop_steps_reached(loop_steps)
        )

    def _max_steps_reached(self, steps: int) -> bool:
        return (
            self.max_steps is not None
            and steps >= self.max_steps
            and not self._trainer_counts_steps
        )

    def _loop_steps_reached(self, loop_steps: int) -> bool:
        return self.loop_steps is not None and loop_steps >= self.loop_steps

    def beyond_train_passes(self, training_passes: int) -> bool:
        """Whether another pass over a loader that ``training_passes`` passes trained from
        would be one epoch too many, should it train (see ``Recorder.training_forward``)."""
        return self.train_passes is not None and training_passes >= self.train_passes

    def allow_epochs(self, epochs: int) -> None:
        """The user asked the script for this many epochs on its command line."""
        if self.train_passes is not None and epochs > self.train_passes:
            self.train_passes = epochs

    def leave_steps_to_trainer(self) -> None:
        """A trainer (Lightning) was given ``max_steps`` and ends there gracefully, running
        its end-of-training work; the step hook must then not stop the job first."""
        self._trainer_counts_steps = True

    def lift_deadline(self) -> None:
        """No wall clock from now on (a debugger attached); the hard stop reads it too."""
        self.timeout_s = None
        self.deadline = None

    def check_time(self) -> None:
        """Backstop for jobs off the main thread, where no alarm signal can be used."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise StopJob(TIMEOUT)


def _whole(value: Value | None) -> int | None:
    return None if value is None else int(value)


def _seconds(value: Value | None) -> float | None:
    return None if value is None else float(value)
