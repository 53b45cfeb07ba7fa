"""Training steps and losses, observed from unmodified code.

A step is an optimizer step; a step given a closure counts the closure's passes
instead (``closure_steps``). Hand-written SGD has no optimizer; there a step is a
training-mode forward of the top module. Forwards of the top module in eval mode or
without grad are evaluation forwards, bounded when no DataLoader feeds them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
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

from quickdev.limits import closure_steps
from quickdev.limits.own_work import own_work
from quickdev.limits.patching import Patcher
from quickdev.limits.profiler_marks import mark_call_site
from quickdev.limits.recorder import Recorder
from quickdev.limits.user_code import caller_origin


def install(
    patcher: Patcher,
    recorder: Recorder,
    on_top_module: Callable[[nn.Module], None] | None = None,
) -> None:
    """``on_top_module``: told the top module once it is known (the memory forecast)."""
    _count_optimizer_steps(patcher, recorder)
    _count_top_level_forwards(patcher, recorder, on_top_module)
    _record_losses(patcher, recorder)


def _count_optimizer_steps(patcher: Patcher, recorder: Recorder) -> None:
    original_init = Optimizer.__init__

    def __init__(optimizer: Optimizer, *args: Any, **kwargs: Any) -> None:
        recorder.optimizer_seen = True
        if recorder.optimizer_origin is None and not recorder.paused:
            recorder.optimizer_origin = caller_origin()
        original_init(optimizer, *args, **kwargs)

    def before_step(optimizer: Optimizer, args: Any, kwargs: Any) -> None:
        mark_call_site()  # the user's optimizer.step() line, in a profile

    def after_step(optimizer: Optimizer, args: Any, kwargs: Any) -> None:
        if recorder.paused:
            return
        closure = closure_steps.closure_of(args, kwargs)
        if isinstance(closure, closure_steps.CountedClosure):
            loop_step = closure.loop_step  # its passes were the steps
            recorder.closure_pass_counted = False
        else:
            loop_step = recorder.train_step()
        recorder.step_taken(loop_step)

    patcher.set(Optimizer, "__init__", __init__)
    closure_steps.install(patcher, recorder)
    for handle in (
        register_optimizer_step_pre_hook(before_step),
        register_optimizer_step_post_hook(after_step),
    ):
        patcher.on_undo(handle.remove)


def _count_top_level_forwards(
    patcher: Patcher, recorder: Recorder, on_top_module: Callable[[nn.Module], None] | None
) -> None:
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
    watch = _TopModules(patcher, recorder)

    def remove_global() -> None:
        while global_handles:
            _remove_quietly(global_handles.pop())

    def before_any_forward(module: nn.Module, args: Any) -> None:
        nonlocal depth
        if depth == 0 and _has_parameters(module):
            remove_global()
            watch.found(module)
            if on_top_module is not None:
                on_top_module(module)
            _before_top_forward(module, args, recorder)
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


# Marks the job's own forward hooks among a module's hooks.
_OURS = "_quickdev_job_hook"


def job_hook(hook: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``hook`` as the job's: a copy of the module the script saves leaves it out."""
    setattr(hook, _OURS, True)
    return hook


class _TopModules:
    """The top module's forward hook, on the module and on the copies the script makes of
    it: the best checkpoint loaded back whole for the test phase (``torch.load``), an EMA
    model (``copy.deepcopy``). A copy is saved without the hook: it cannot be pickled,
    and a file saved with it would need Quickdev to load.

    Its direct submodules with parameters are watched too, for the calls the script makes
    of them outside the top module's forward: a diffusion model samples by calling its
    denoiser (``self.model(x, t)``) from ``sample()``, a thousand times, never through its
    own ``forward``. Those count as evaluation forwards, bounded as an evaluation loop is.
    They are watched on their class's ``__call__`` (classes of the script or a library,
    not torch's own layers), not with a hook in the module: a hook would be pickled with
    the module by a class with a ``__getstate__`` of its own (an ``nn.LSTM``)."""

    def __init__(self, patcher: Patcher, recorder: Recorder) -> None:
        self.patcher = patcher
        self.recorder = recorder
        self.top_class: type[nn.Module] | None = None
        self.running = 0  # forwards of a top module under way
        self._part_classes: set[type[nn.Module]] = set()

    def found(self, module: nn.Module) -> None:
        self.top_class = type(module)
        self.watch(module)
        original_get = nn.Module.__getstate__
        original_set = nn.Module.__setstate__

        def __getstate__(module: nn.Module) -> dict[str, Any]:
            state: dict[str, Any] = original_get(module)  # type: ignore[no-untyped-call]
            for name in ("_forward_pre_hooks", "_forward_hooks"):
                hooks = state.get(name)
                if hooks and any(getattr(h, _OURS, False) for h in hooks.values()):
                    kept = [(k, h) for k, h in hooks.items() if not getattr(h, _OURS, False)]
                    state[name] = OrderedDict(kept)
            return state

        def __setstate__(module: nn.Module, state: dict[str, Any]) -> None:
            original_set(module, state)  # type: ignore[no-untyped-call]
            if type(module) is self.top_class:
                self.watch(module)

        self.patcher.set(nn.Module, "__getstate__", __getstate__)
        self.patcher.set(nn.Module, "__setstate__", __setstate__)

    def watch(self, module: nn.Module) -> None:
        recorder = self.recorder
        watch = self

        @job_hook
        def before_forward(module: nn.Module, args: Any) -> None:
            _before_top_forward(module, args, recorder)
            watch.running += 1  # after: a budget that ends the job here runs no forward

        @job_hook
        def after_forward(module: nn.Module, args: Any, output: Any) -> None:
            watch.running = max(watch.running - 1, 0)

        self._add(module._forward_pre_hooks, before_forward)
        key = self._add(module._forward_hooks, after_forward)
        module._forward_hooks_always_called[key] = True
        # From the module dict, not children(): this runs inside the user's first forward,
        # and a torch frame here is where Step Into on ``model(x)`` would stop.
        for part in module._modules.values():
            if part is not None and _has_parameters(part):
                self._watch_part_class(type(part))

    def _watch_part_class(self, part_class: type[nn.Module]) -> None:
        if part_class in self._part_classes or part_class.__module__.startswith("torch."):
            return
        self._part_classes.add(part_class)
        original_call = part_class.__call__
        recorder = self.recorder
        watch = self

        def __call__(part: nn.Module, *args: Any, **kwargs: Any) -> Any:
            # Outside the top module's forward: the script's own call of the part.
            outside = not watch.running and not recorder.paused
            if outside and (not part.training or not torch.is_grad_enabled()):
                mark_call_site()  # the user's sampling line, in a profile
                recorder.eval_forward()
            return original_call(part, *args, **kwargs)

        self.patcher.set(part_class, "__call__", __call__)

    def _add(self, hooks: dict[int, Any], hook: Callable[..., Any]) -> int:
        """What register_forward_(pre_)hook does, done directly (see above): a handle id
        of torch's own numbering, the hook in the module's dict."""
        key = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        hooks[key] = hook
        self.patcher.on_undo(lambda: _drop(hooks, key))
        return key


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


def _before_top_forward(module: nn.Module, args: Any, recorder: Recorder) -> None:
    if recorder.paused:
        return
    mark_call_site()  # the user's model(x) line, in a profile
    if recorder.shapes is not None:
        recorder.shapes.forward_starting(args)
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
        if has_torch_function_unary(tensor) or recorder.paused:
            # A tensor subclass or mode handles this call and calls back here with the
            # plain tensor. Record then, once. Paused: the job runs the step itself.
            return original_backward(tensor, *args, **kwargs)  # type: ignore[no-untyped-call]
        mark_call_site()  # the user's loss.backward() line, in a profile
        loss = getattr(tensor, _UNSCALED, tensor)
        if tensor.numel() == 1:
            # The loss belongs to the step it is about to feed (forward counting has
            # already counted that step).
            step = recorder.steps if not recorder.optimizer_seen else recorder.steps + 1
            with own_work():
                value = float(loss.detach())
            recorder.loss(value, max(step, 1))
        if recorder.nonfinite is not None:
            recorder.nonfinite.before_backward(loss)
        answer = original_backward(tensor, *args, **kwargs)  # type: ignore[no-untyped-call]
        for ended in recorder.on_backward_end:
            ended()
        return answer

    def scale(scaler: Any, outputs: Any, *args: Any, **kwargs: Any) -> Any:
        # Mixed precision multiplies the loss by 2**16 or so before backward
        # (`scaler.scale(loss).backward()`); the loss a user reads is the unscaled one.
        scaled = original_scale(scaler, outputs, *args, **kwargs)
        if isinstance(scaled, torch.Tensor) and scaled is not outputs:
            with own_work():
                setattr(scaled, _UNSCALED, outputs.detach())
        return scaled

    original_scaler_step = torch.amp.GradScaler.step

    def scaler_step(scaler: Any, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        # A step the scaler skips (inf/NaN gradients at a float16 run's first scales) never
        # reaches the optimizer's step hook; the script took it all the same.
        before = recorder.steps
        answer = original_scaler_step(scaler, optimizer, *args, **kwargs)
        if recorder.steps == before and not recorder.paused:
            recorder.scaler_skipped_steps += 1
        return answer

    backward.__doc__ = original_backward.__doc__
    scale.__doc__ = original_scale.__doc__
    scaler_step.__doc__ = original_scaler_step.__doc__
    patcher.set(torch.Tensor, "backward", backward)
    patcher.set(torch.amp.GradScaler, "scale", scale)
    patcher.set(torch.amp.GradScaler, "step", scaler_step)
