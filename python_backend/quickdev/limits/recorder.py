"""What the job has seen so far: loaders, steps, losses, redirections.

The limits call into one Recorder; it keeps the numbers for result.json and fires
the EventHub so observers (progress, scalars, profiler) see the same events.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from quickdev.events import EventHub
from quickdev.limits.budget import Budget
from quickdev.rundir.result import DeviceRemaps, LoaderStats, Redirection

# A job without limits could back-propagate millions of times; result.json keeps the
# first ones (TensorBoard gets every one).
MAX_RECORDED_LOSSES = 10_000


class Recorder:
    def __init__(self, hub: EventHub, budget: Budget) -> None:
        self.hub = hub
        self.budget = budget
        self.loaders: list[LoaderStats] = []
        self.steps = 0
        self.losses: list[float] = []
        self.redirections: list[Redirection] = []
        self.one_epoch_options: list[str] = []
        self.optimizer_seen = False
        # The device engine's counts, read when the result is written.
        self.device: Callable[[], DeviceRemaps] | None = None
        self._last_step_at = time.perf_counter()

    def new_loader(self, origin: str) -> LoaderStats:
        stats = LoaderStats(origin=origin)
        self.loaders.append(stats)
        return stats

    def batch(self, stats: LoaderStats, wait_s: float) -> None:
        stats.batches += 1
        stats.data_wait_s += wait_s
        self.hub.batch(stats.origin, wait_s)
        self.budget.check_time()

    def train_step(self) -> None:
        now = time.perf_counter()
        self.steps += 1
        self.hub.train_step(self.steps, now - self._last_step_at)
        self._last_step_at = now
        self.budget.check_time()

    def loss(self, value: float, step: int) -> None:
        if len(self.losses) < MAX_RECORDED_LOSSES:
            self.losses.append(value)
        self.hub.loss(step, value)

    def redirected(self, requested: str, written: str) -> None:
        if not any(r.requested == requested for r in self.redirections):
            self.redirections.append(Redirection(requested=requested, written=written))
