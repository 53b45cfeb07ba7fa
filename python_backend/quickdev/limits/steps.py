"""Training steps and losses, observed from unmodified code.

A step is an optimizer step. Hand-written SGD has no optimizer; there a step is a
training-mode forward of the top module. Forwards of the top module in eval mode or
without grad are evaluation forwards, bounded when no DataLoader feeds them.
"""

from __future__ import annotations

from collections import OrderedDict
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
        recorder.step_taken(recorder.train_step())

    patcher.set(Optimizer, "__init__", __init__)
    handle = register_optimizer_step_post_hook(after_step)
    patcher.on_undo(handle.remove)


def _count_top_level_forwards(patcher: Patcher, recorder: Recorder) -> None:
    """Find the top module with global hooks, then watch only its own forwards.

    The top module is the first one with parameters called from outside any module (a
    loss module called beside it comes later). Global hooks slow every module call a
    little, so they are removed as soon as it is known.
    """
    depth = 0
    global_handles: list[Any] = []
    watch = _TopModules(patcher, recorder)

    def remove_global() -> None:
        while global_handles:
            global_handles.pop().remove()

    def before_any_forward(module: nn.Module, args: Any) -> None:
        nonlocal depth
        if depth == 0 and next(module.parameters(), None) is not None:
            remove_global()
            watch.found(module)
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


# Marks the job's own forward hook among a module's hooks.
_OURS = "_quickdev_top_module_hook"


class _TopModules:
    """The top module's forward hook, on the module and on the copies the script makes of
    it: the best checkpoint loaded back whole for the test phase (``torch.load``), an EMA
    model (``copy.deepcopy``). A copy is saved without the hook: it cannot be pickled,
    and a file saved with it would need Quickdev to load."""

    def __init__(self, patcher: Patcher, recorder: Recorder) -> None:
        self.patcher = patcher
        self.recorder = recorder
        self.top_class: type[nn.Module] | None = None

    def found(self, module: nn.Module) -> None:
        self.top_class = type(module)
        self.watch(module)
        original_get = nn.Module.__getstate__
        original_set = nn.Module.__setstate__

        def __getstate__(module: nn.Module) -> dict[str, Any]:
            state: dict[str, Any] = original_get(module)  # type: ignore[no-untyped-call]
            hooks = state.get("_forward_pre_hooks")
            if hooks and any(getattr(h, _OURS, False) for h in hooks.values()):
                kept = [(k, h) for k, h in hooks.items() if not getattr(h, _OURS, False)]
                state["_forward_pre_hooks"] = OrderedDict(kept)
            return state

        def __setstate__(module: nn.Module, state: dict[str, Any]) -> None:
            original_set(module, state)  # type: ignore[no-untyped-call]
            if type(module) is self.top_class:
                self.watch(module)

        self.patcher.set(nn.Module, "__getstate__", __getstate__)
        self.patcher.set(nn.Module, "__setstate__", __setstate__)

    def watch(self, module: nn.Module) -> None:
        recorder = self.recorder

        def before_forward(module: nn.Module, args: Any) -> None:
            _before_top_forward(module, recorder)

        setattr(before_forward, _OURS, True)
        handle = module.register_forward_pre_hook(before_forward)
        self.patcher.on_undo(handle.remove)


def _before_top_forward(module: nn.Module, recorder: Recorder) -> None:
    if not module.training or not torch.is_grad_enabled():
        recorder.eval_forward()
        return
    recorder.training_forward()
    if recorder.optimizer_seen:
        return  # the optimizer's step hook counts steps
    # Hand-written SGD: a training forward is a step. Counted here, before it runs, the
    # step that reaches a budget still runs to the loop's next iteration.
    recorder.hand_step_starting()
    recorder.step_taken(recorder.train_step(), hand_written=True)


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
        if tensor.numel() == 1:
            # The loss belongs to the step it is about to feed (forward counting has
            # already counted that step).
            step = recorder.steps if not recorder.optimizer_seen else recorder.steps + 1
            loss = getattr(tensor, _UNSCALED, tensor)
            recorder.loss(float(loss.detach()), max(step, 1))
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
