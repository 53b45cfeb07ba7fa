"""Training steps and losses, observed from unmodified code.

A step is an optimizer step. Hand-written SGD has no optimizer; there a step is a
training-mode forward of the top module. Forwards of the top module in eval mode or
without grad are evaluation forwards, bounded when no DataLoader feeds them.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.optim import Optimizer
from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)
from torch.overrides import has_torch_function_unary
from torch.utils.hooks import RemovableHandle

from quickdev.limits.patching import Patcher
from quickdev.limits.profiler_marks import mark_call_site, own_work
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

    def before_step(optimizer: Optimizer, args: Any, kwargs: Any) -> None:
        mark_call_site()  # the user's optimizer.step() line, in a profile

    def after_step(optimizer: Optimizer, args: Any, kwargs: Any) -> None:
        loop_step = recorder.train_step()
        recorder.budget.check_steps(recorder.steps)
        if loop_step:
            recorder.budget.check_loop_steps(recorder.loop_steps)

    patcher.set(Optimizer, "__init__", __init__)
    for handle in (
        register_optimizer_step_pre_hook(before_step),
        register_optimizer_step_post_hook(after_step),
    ):
        patcher.on_undo(handle.remove)


def _count_top_level_forwards(patcher: Patcher, recorder: Recorder) -> None:
    """Find the top module with global hooks, then watch only its own forwards.

    The top module is the first one with parameters called from outside any module (a
    loss module called beside it comes later). Global hooks slow every module call a
    little, so they are removed as soon as it is known.

    What runs inside the user's ``model(x)`` calls no Python function of torch (module
    dicts are read and written directly): under a debugger, Step Into from that line
    would stop in each one before reaching ``forward``.
    """
    depth = 0
    global_handles: list[Any] = []

    def remove_global() -> None:
        while global_handles:
            _remove_quietly(global_handles.pop())

    def before_any_forward(module: nn.Module, args: Any) -> None:
        nonlocal depth
        if depth == 0 and _has_parameters(module):
            remove_global()
            _watch_top_module(module, patcher, recorder)
            _before_top_forward(module, recorder)
            return
        depth += 1

    def after_any_forward(module: nn.Module, args: Any, output: Any) -> None:
        nonlocal depth
        depth = max(depth - 1, 0)

    global_handles.append(nn.modules.module.register_module_forward_pre_hook(before_any_forward))
    global_handles.append(
        nn.modules.module.register_module_forward_hook(after_any_forward, always_call=True)
    )
    patcher.on_undo(remove_global)


def _watch_top_module(module: nn.Module, patcher: Patcher, recorder: Recorder) -> None:
    # What register_forward_pre_hook does, done directly (see above): a handle id of
    # torch's own numbering, the hook in the module's dict.
    hooks = module._forward_pre_hooks
    key = RemovableHandle.next_id
    RemovableHandle.next_id += 1
    hooks[key] = lambda m, args: _before_top_forward(m, recorder)
    patcher.on_undo(lambda: _drop(hooks, key))


def _drop(hooks: dict[int, Any], key: int) -> None:
    hooks.pop(key, None)


def _has_parameters(module: nn.Module) -> bool:
    """``next(module.parameters(), None) is not None``, from the module dicts."""
    pending = [module]
    while pending:
        current = pending.pop()
        if any(p is not None for p in current._parameters.values()):
            return True
        pending.extend(m for m in current._modules.values() if m is not None)
    return False


def _remove_quietly(handle: Any) -> None:
    """``RemovableHandle.remove()``, from its dict references (see above)."""
    refs = getattr(handle, "hooks_dict_ref", None), *getattr(handle, "extra_dict_ref", ())
    if refs[0] is None:
        handle.remove()
        return
    for ref in refs:
        hooks = ref() if ref is not None else None
        if hooks is not None:
            hooks.pop(handle.id, None)


def _before_top_forward(module: nn.Module, recorder: Recorder) -> None:
    mark_call_site()  # the user's model(x) line, in a profile
    if not module.training or not torch.is_grad_enabled():
        recorder.eval_forward()
        return
    recorder.training_forward()
    if recorder.optimizer_seen:
        return  # the optimizer's step hook counts steps
    # Hand-written SGD: a training forward is a step. Stop before the next step
    # starts, so exactly the budgeted steps ran.
    recorder.budget.check_steps(recorder.steps)
    if recorder.in_loop_without_loader():
        recorder.budget.check_loop_steps(recorder.loop_steps)
    recorder.train_step()


# On the tensor GradScaler.scale returns: the loss it scaled, which is what to record.
_UNSCALED = "_quickdev_unscaled"


def _record_losses(patcher: Patcher, recorder: Recorder) -> None:
    original_backward = torch.Tensor.backward
    original_scale = torch.amp.GradScaler.scale

    def backward(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if has_torch_function_unary(tensor):
            # A tensor subclass or mode handles this call and calls back here with the
            # plain tensor. Record then, once.
            return original_backward(tensor, *args, **kwargs)  # type: ignore[no-untyped-call]
        mark_call_site()  # the user's loss.backward() line, in a profile
        if tensor.numel() == 1:
            # The loss belongs to the step it is about to feed (forward counting has
            # already counted that step).
            step = recorder.steps if not recorder.optimizer_seen else recorder.steps + 1
            loss = getattr(tensor, _UNSCALED, tensor)
            with own_work():
                value = float(loss.detach())
            recorder.loss(value, max(step, 1))
        return original_backward(tensor, *args, **kwargs)  # type: ignore[no-untyped-call]

    def scale(scaler: Any, outputs: Any, *args: Any, **kwargs: Any) -> Any:
        # Mixed precision multiplies the loss by 2**16 or so before backward
        # (`scaler.scale(loss).backward()`); the loss a user reads is the unscaled one.
        scaled = original_scale(scaler, outputs, *args, **kwargs)
        if isinstance(scaled, torch.Tensor) and scaled is not outputs:
            setattr(scaled, _UNSCALED, outputs.detach())
        return scaled

    backward.__doc__ = original_backward.__doc__
    scale.__doc__ = original_scale.__doc__
    patcher.set(torch.Tensor, "backward", backward)
    patcher.set(torch.amp.GradScaler, "scale", scale)
