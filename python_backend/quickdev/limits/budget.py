"""The budgets a job's limits enforce: optimizer steps and wall clock.

The limits count steps and batches in the user's process, so they check the budget
where they count; the job's signal handling (alarm, kill, hard stop) lives in
``quickdev.job.signals``. ``StopJob`` derives from BaseException so that a user's
``except Exception`` around the training loop cannot swallow it.
"""

from __future__ import annotations

import time


class StopJob(BaseException):
    """A budget ran out; the job ends as ``stopped`` with this reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Budget:
    """The step and wall-clock budgets of one job."""

    def __init__(self, max_steps: int | None, timeout_s: float | None) -> None:
        self.max_steps = max_steps
        self.timeout_s = timeout_s
        self.deadline: float | None = None
        # Set by leave_steps_to_trainer(): a trainer that stops at max_steps by itself.
        self._trainer_counts_steps = False

    def start(self) -> None:
        if self.timeout_s is not None:
            self.deadline = time.monotonic() + self.timeout_s

    def check_steps(self, steps: int) -> None:
        if (
            self.max_steps is not None
            and steps >= self.max_steps
            and not self._trainer_counts_steps
        ):
            raise StopJob("max_steps")

    def leave_steps_to_trainer(self) -> None:
        """A trainer (Lightning) was given ``max_steps`` and ends there gracefully, running
        its end-of-training work; the step hook must then not stop the job first."""
        self._trainer_counts_steps = True

    def reached_by_trainer(self, steps: int) -> bool:
        """Whether a trainer ended the job gracefully at our step budget."""
        return self._trainer_counts_steps and self.max_steps is not None and steps >= self.max_steps

    def check_time(self) -> None:
        """Backstop for jobs off the main thread, where no alarm signal can be used."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise StopJob("timeout")
