"""Steps count what costs: a closure optimizer's passes, not its ``step()`` calls.

``optimizer.step(closure)`` lets the optimizer run the closure (a forward and a
backward) as often as it needs: LBFGS up to ``max_iter`` times (20 by default) per
step, more with a line search. So each call of a closure given to any optimizer's
``step`` is a step against the budgets; the ``step()`` call that ran them counts
nothing more. Once the budget is spent, the closure is not run again: it answers its
last loss, which an optimizer reads as converged (LBFGS ends its step when the loss no
longer changes), and the step hook then ends the job or its loop as after any step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.optim import Optimizer
from torch.optim.optimizer import register_optimizer_step_pre_hook

from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder


class CountedClosure:
    """The user's closure; each call that runs it is a training step."""

    def __init__(self, closure: Callable[[], Any], recorder: Recorder) -> None:
        self.closure = closure
        self.recorder = recorder
        self.passes = 0
        self.loop_step = False  # a pass took no DataLoader batch
        self._last: Any = None

    def __call__(self) -> Any:
        recorder = self.recorder
        in_loop = recorder.in_loop_without_loader()
        spent = recorder.budget.steps_spent(
            recorder.steps, recorder.loop_steps if in_loop else None
        )
        if spent and self.passes:
            return self._last
        recorder.closure_pass_counted = False
        self._last = self.closure()
        self.passes += 1
        self.loop_step = recorder.train_step() or self.loop_step
        recorder.closure_pass_counted = True
        return self._last


def closure_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The closure given to ``Optimizer.step`` (``args`` starts with the optimizer)."""
    return kwargs["closure"] if "closure" in kwargs else (args[1] if len(args) > 1 else None)


def install(patcher: Patcher, recorder: Recorder) -> None:
    def before_step(
        optimizer: Optimizer, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
        closure = closure_of(args, kwargs)
        # Once only: an optimizer that wraps another passes the same closure on.
        if closure is None or isinstance(closure, CountedClosure):
            return None
        counted = CountedClosure(closure, recorder)
        if "closure" in kwargs:
            return args, {**kwargs, "closure": counted}
        return (args[0], counted, *args[2:]), kwargs

    handle = register_optimizer_step_pre_hook(before_step)
    patcher.on_undo(handle.remove)
