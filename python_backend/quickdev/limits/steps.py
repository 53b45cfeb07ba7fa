"""Training steps and losses, observed from unmodified code.

A step is an optimizer step. Hand-written SGD has no optimizer; there a step is a
training-mode forward of the top module, counted with global module hooks that are
removed as soon as an optimizer exists (they slow every module call a little).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.optim import Optimizer
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.overrides import has_torch_function_unary

from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder


def install(patcher: Patcher, recorder: Recorder) -> None:
    _count_optimizer_steps(patcher, recorder)
    _count_top_level_forwards(patcher, recorder)
    _record_losses(patcher, recorder)


def _count_optimizer_steps(patcher: Patcher, recorder: Recorder) -> None:
    original_init = Optimizer.__init__

    def __init__(optimizer: Optimizer, *args: Any, **kwargs: Any) -> None:
        recorder.optimizer_seen = True
        original_init(optimizer, *args, **kwargs)

    def after_step(optimizer: Optimizer, args: Any, kwargs: Any) -> None:
        recorder.train_step()
        recorder.budget.check_steps(recorder.steps)

    patcher.set(Optimizer, "__init__", __init__)
    handle = register_optimizer_step_post_hook(after_step)
    patcher.on_undo(handle.remove)


def _count_top_level_forwards(patcher: Patcher, recorder: Recorder) -> None:
    depth = 0
    top: nn.Module | None = None
    handles: list[Any] = []

    def remove() -> None:
        while handles:
            handles.pop().remove()

    def before_forward(module: nn.Module, args: Any) -> None:
        nonlocal depth, top
        if recorder.optimizer_seen:
            remove()
            depth = 0
            return
        # The top module is the first one with parameters called from outside any
        # module; a loss module called beside it is not a step.
        if (
            depth == 0
            and top is None
            and module.training
            and next(module.parameters(), None) is not None
        ):
            top = module
        if depth == 0 and module is top and module.training:
            # Stop before the next step starts, so exactly max_steps steps ran.
            recorder.budget.check_steps(recorder.steps)
            recorder.train_step()
        depth += 1

    def after_forward(module: nn.Module, args: Any, output: Any) -> None:
        nonlocal depth
        depth = max(depth - 1, 0)

    handles.append(nn.modules.module.register_module_forward_pre_hook(before_forward))
    handles.append(nn.modules.module.register_module_forward_hook(after_forward, always_call=True))
    patcher.on_undo(remove)


def _record_losses(patcher: Patcher, recorder: Recorder) -> None:
    original_backward = torch.Tensor.backward

    def backward(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if has_torch_function_unary(tensor):
            # A TorchFunctionMode (the device engine's) is active: torch hands this
            # call to it, and it calls back here with the mode off. Record then, once.
            return original_backward(tensor, *args, **kwargs)  # type: ignore[no-untyped-call]
        if tensor.numel() == 1:
            # The loss belongs to the step it is about to feed (forward counting has
            # already counted that step).
            step = recorder.steps if not recorder.optimizer_seen else recorder.steps + 1
            recorder.loss(float(tensor.detach()), max(step, 1))
        return original_backward(tensor, *args, **kwargs)  # type: ignore[no-untyped-call]

    backward.__doc__ = original_backward.__doc__
    patcher.set(torch.Tensor, "backward", backward)
