"""The estimate held against the job's own first real step of a checked loader.

The estimate counts what fake tensors show (FLOPs, the bytes of new tensors) at rates
measured on small operators, and misses what they do not: an operator slower on this
model's shapes than on the measured ones (a convolution of three input channels runs at a
fifth of the measured rate), what an operator reads, the script's own work around the
step. So the first real training step of a loader whose step was estimated is timed on the
work clock, from its batch handed to the script to the end of its first backward (the span
the probe counted: a micro-step of gradient accumulation, a closure optimizer's forward and
backward inside its step), or of its optimizer step where no ``Tensor.backward`` ran
(``torch.autograd.backward``); where it took longer than estimated, the loaders decided
after it scale their estimates by as much. A small convolutional network at batch 1024 (the
benchmarks' LightningModule): its training step at 128 was estimated at 1.13 s and took
1.72 s, so its evaluation batch's 3.99 s read 6.05 s (it takes 5.5 s), above the bound of 5,
and computed smaller too; counted alone, it was kept and took 11 of the job's 20 s.

Only upwards (the estimate is a floor), at most ``MAX_SCALE``, and only from a step long
enough that its fixed costs (Python around the step, first-call set-ups) do not decide it.
"""

from __future__ import annotations

import logging
import os

from torch.optim.optimizer import register_optimizer_step_post_hook

from quickdev.limits.patching import Patcher
from quickdev.limits.work_clock import busy_seconds

log = logging.getLogger(__name__)

MAX_SCALE = 4.0
# A step shorter than this share of the bound tells too little of its size's cost.
MIN_SHARE_OF_BOUND = 0.1


class Calibration:
    """``scale``: by how much the job's first timed step took longer than its estimate."""

    def __init__(self, patcher: Patcher, bound_s: float) -> None:
        self.bound_s = bound_s
        self.scale = 1.0
        self.pid = os.getpid()
        self._expected: float | None = None
        self._started = 0.0
        self._measured = False
        handle = register_optimizer_step_post_hook(lambda *args: self.step_ended())
        patcher.on_undo(handle.remove)

    def time_next_step(self, expected_s: float) -> None:
        """A loader hands the script the first batch of a step estimated at ``expected_s``:
        time it, unless a step was timed already."""
        if self._measured or self._expected is not None or expected_s <= 0:
            return
        self._expected = expected_s
        self._started = busy_seconds()

    def step_ended(self) -> None:
        """The script's backward() returned (the job's wrapper of it calls this), or its
        optimizer's step did."""
        if self._expected is None or os.getpid() != self.pid:
            return  # nothing timed, or a probe (the forked copy)
        took = busy_seconds() - self._started
        expected, self._expected = self._expected, None
        if took < MIN_SHARE_OF_BOUND * self.bound_s:
            return  # too short to tell: the next estimated step is timed instead
        self._measured = True
        self.scale = min(max(took / expected, 1.0), MAX_SCALE)
        log.info(
            "step cost: the first timed step took %.3g s, estimated %.3g s: later estimates x %.2f",
            took,
            expected,
            self.scale,
        )
