"""What result.json says of steps too slow for the job's CPU at full size
(``quickdev.limits.step_cost``); standard library only, as the rest of ``rundir``."""

from __future__ import annotations

from dataclasses import dataclass

# An exception raised in one process for an error that happened in another (the step-cost
# check's run of the full-size step, limits/step_cost/probe.py) carries, under these
# attribute names, the ErrorInfo of where it happened and its traceback as Python printed it.
ERROR_ELSEWHERE = "_quickdev_error_elsewhere"
TRACEBACK_ELSEWHERE = "_quickdev_traceback_elsewhere"


@dataclass
class StepCost:
    """A full-size step this CPU could not afford in seconds, and what the job did about it
    (``limits/step_cost``): its arithmetic ran at a smaller batch from the same loader while
    the script's own full-size step ran once on fake tensors, or the batch was kept (why
    says why). One per loader (or hand-made loop) it concerns; cheap steps are not listed."""

    origin: str  # "file:line": where the DataLoader was made, or the hand-made loop's step
    batch_size: int  # the script's own
    computed_at: int  # the batch size the arithmetic ran at (batch_size: kept)
    # "step" (a training step) or "evaluation batch" (a pass that took no step)
    unit: str = "step"
    full_s: float | None = None  # the full-size step's seconds on this CPU (estimated)
    measured: bool = False  # full_s was measured (a hand-made step), not estimated
    flops: int | None = None  # counted in the full-size step
    # The full-size check on fake tensors: "passed", "failed" (the job's error is its
    # error), "partial" (it could not go on: why), "none" (not run)
    checked: str = "none"
    why: str | None = None  # why the batch was kept, or why the check stopped
    line: str = ""  # the sentence the terminal said first and the result page shows
