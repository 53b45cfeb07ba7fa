"""A verdict in seconds at any batch size.

Where a DataLoader's full-size step would take this CPU longer than a bound
(``--step-seconds``), the job computes its real steps at a smaller batch from the same
loader and runs the script's own full-size step once on fake tensors, so that shape, dtype
and device errors at the full size fail the job at the script's line as a real step would
(``check.py``, ``probe.py``, ``smaller.py``); every change is said before the step runs. A
hand-made batch (no DataLoader) keeps its size, and a slow step of one gets advice naming
the script's batch-size option (``hand_made.py``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from torch.optim import Optimizer

from quickdev.limits.patching import Patcher
from quickdev.limits.step_cost.calibration import Calibration
from quickdev.limits.step_cost.check import StepCostCheck
from quickdev.limits.step_cost.hand_made import HandMadeSteps
from quickdev.rundir.step_cost import StepCost

__all__ = ["HandMadeSteps", "StepCostCheck", "install"]


def install(
    patcher: Patcher,
    bound_s: float,
    records: list[StepCost],
    *,
    memory: bool,
    step_record: Callable[[], bytes | None],
    adopt_record: Callable[[bytes | None], None],
    quiet: Callable[[], None],
    signature: Callable[[Any], str],
) -> StepCostCheck:
    """``records``: where what was decided goes (the recorder's, for result.json);
    ``memory``: the memory forecast is on; ``step_record`` and ``adopt_record``: its
    capture's record of a step, taken in the probe and adopted by the job; ``quiet``: what
    makes a probe report nothing of its own; ``signature``: a batch's shapes in words."""
    optimizers = _watch_optimizers(patcher)
    return StepCostCheck(
        bound_s,
        records,
        lambda: _parameters(optimizers),
        memory=memory,
        step_record=step_record,
        adopt_record=adopt_record,
        quiet=quiet,
        signature=signature,
        calibration=Calibration(patcher, bound_s),
    )


def _watch_optimizers(patcher: Patcher) -> weakref.WeakSet[Optimizer]:
    """The optimizers the script made: their parameters are the model's size, known
    before its first step."""
    made: weakref.WeakSet[Optimizer] = weakref.WeakSet()
    original_init = Optimizer.__init__

    def __init__(optimizer: Optimizer, *args: Any, **kwargs: Any) -> None:
        original_init(optimizer, *args, **kwargs)
        made.add(optimizer)

    patcher.set(Optimizer, "__init__", __init__)
    return made


def _parameters(optimizers: weakref.WeakSet[Optimizer]) -> int | None:
    seen: dict[int, int] = {}
    for optimizer in list(optimizers):
        for group in optimizer.param_groups:
            for parameter in group["params"]:
                seen[id(parameter)] = parameter.numel()
    return sum(seen.values()) if seen else None
