"""How much of the training loop's time went to waiting for the next batch.

Plain Python with no torch import: the loader limits (limits/loaders.py) time each fetch
and tell us.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from quickdev.events import BaseObserver

# Above this share of the loop's time spent waiting for data, the input pipeline
# is the bottleneck worth fixing before anything else.
HIGH_SHARE = 0.3


class DataWaitObserver(BaseObserver, feature="the data-wait measure"):
    """Counts waits up to the last training step: a fetch with no step after it (a
    crash in the first step, an evaluation pass) says nothing about the training loop."""

    def __init__(self, overhead_s: Callable[[], float] = lambda: 0.0) -> None:
        """``overhead_s`` tells the seconds so far spent by the profiler itself inside the
        loop (writing a trace at the end of a cycle); they are not the loop's time."""
        self.wait_by_origin: dict[str, float] = {}
        self._pending: dict[str, float] = {}
        self._loop_start: float | None = None
        self._last_step: float | None = None
        self._overhead_s = overhead_s
        self._overhead_at_last_step = 0.0

    def on_batch(self, origin: str, wait_s: float) -> None:
        if self._loop_start is None:
            # The loop began when the first fetch began, not when it returned.
            self._loop_start = time.perf_counter() - wait_s
        self._pending[origin] = self._pending.get(origin, 0.0) + wait_s

    def on_train_step(self, step: int, step_time_s: float) -> None:
        # Runs before the profiler's own step for this event, so the overhead read here
        # is what lies between the first fetch and now.
        self._last_step = time.perf_counter()
        self._overhead_at_last_step = self._overhead_s()
        for origin, wait_s in self._pending.items():
            self.wait_by_origin[origin] = self.wait_by_origin.get(origin, 0.0) + wait_s
        self._pending.clear()

    @property
    def total_wait_s(self) -> float:
        return sum(self.wait_by_origin.values())

    def share(self) -> float:
        """Waiting time over the loop's wall time, from the first fetch to the last step."""
        if self._loop_start is None or self._last_step is None:
            return 0.0
        span = self._last_step - self._loop_start - self._overhead_at_last_step
        if span <= 0:
            return 0.0
        return min(1.0, self.total_wait_s / span)

    def advice(self) -> str | None:
        share = self.share()
        if share < HIGH_SHARE or not self.wait_by_origin:
            return None
        worst = max(self.wait_by_origin, key=lambda k: self.wait_by_origin[k])
        return (
            f"{share:.0%} of the training loop waited for data from the DataLoader at {worst}: "
            "make __getitem__/collate cheaper or cache the data, and use num_workers>0 with "
            "pin_memory=True in the full run (quick-dev loads in the main process)."
        )
