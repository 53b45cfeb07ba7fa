"""Observe the script's first training step for ``--memory-forecast``, then forecast.

What a step is comes from the script itself: the model's first training forward (the
top module's, with the arguments the script passed), the torch calls the script makes
on its outputs until ``backward`` (the loss: ``criterion(out, y)``, ``logits.view(-1,
V)``, ``loss / accumulation``; recorded by a torch function mode that is on only from
that forward's start until backward), the values the step read from its tensors
(``bool(mask.all())``), the number of backward calls before the optimizer step (gradient
accumulation), and the optimizer. Only shapes, dtypes, those read values and the
functions called are kept, never tensor data. The forecast itself (``quickdev.forecast``) runs
when the script has ended, so it costs the script's run nothing.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from torch.optim import Optimizer
from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from quickdev import problems
from quickdev.events import BaseObserver, EventHub
from quickdev.forecast.ddp import gradient_buckets, replayed_module
from quickdev.forecast.devices import AUTO, DeviceChoice, parse_devices
from quickdev.forecast.forecast import make_forecast
from quickdev.forecast.reads import MAX_READS, read_name
from quickdev.forecast.step import (
    Backward,
    Call,
    Forward,
    ParamRef,
    Ref,
    StepRecipe,
    TensorSpec,
    batch_size_of,
    reads_seq_first,
)
from quickdev.limits.device import DeviceEngine
from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder
from quickdev.limits.steps import job_hook
from quickdev.options import RunOptions
from quickdev.rundir.memory import MemoryForecast
from quickdev.rundir.result import JobResult

log = logging.getLogger(__name__)

# Calls the loss's code may make before the recording gives up (a loop over tensors).
MAX_RECORDED_CALLS = 5000


def install(
    patcher: Patcher,
    hub: EventHub,
    recorder: Recorder,
    actual: str,
    options: RunOptions,
    engine: DeviceEngine,
) -> StepCapture:
    """Watch for the first training step; the job's observers hand it the result."""
    choice = parse_devices(options.memory_forecast or AUTO)
    capture = StepCapture(recorder, actual, choice, engine.cuda_autocast)
    capture.install(patcher)
    hub.add(capture)
    return capture


class StepCapture(BaseObserver, feature="the memory forecast"):
    """waiting -> recording (first training forward seen) -> captured (its optimizer step
    or the next training forward) ; the forecast is made in ``on_result``."""

    def __init__(
        self,
        recorder: Recorder,
        device: str,
        devices: DeviceChoice,
        cuda_autocast: Callable[[], torch.dtype | None],
    ) -> None:
        self.recorder = recorder
        self.device = torch.device(device)
        self.devices = devices
        # The script's CUDA autocast region where the CPU stands in for CUDA (the device
        # engine), which this CPU may compute in another dtype or in float32.
        self.cuda_autocast = cuda_autocast
        self.state = "waiting"
        self.model: nn.Module | None = None
        self.optimizer: Optimizer | None = None
        self.events: list[Forward | Call | Backward] = []
        self.backwards = 0
        self.autocast_dtype: torch.dtype | None = None
        self.loss_note: str | None = None
        self.training: dict[nn.Module, bool] = {}
        self._names: dict[int, str] = {}
        self._tracked: dict[int, tuple[int, weakref.ref[torch.Tensor]]] = {}
        self._mode: _StepRecorder | None = None
        self.reads: list[tuple[str, Any]] = []
        self._in_forward = 0
        self._next_ref = 0
        self._hooks: list[Any] = []
        # The full-size step a step-cost probe recorded, replayed instead of this process's
        # smaller one (limits/step_cost/handover.py); a string: why there is none.
        self.full_size: Any = None

    def install(self, patcher: Patcher) -> None:
        # Before the steps' own hooks, which may end the job at this very step.
        for register in (register_optimizer_step_pre_hook, register_optimizer_step_post_hook):
            handle = register(lambda optimizer, args, kwargs: self._optimizer_step(optimizer))
            patcher.on_undo(handle.remove)
        patcher.on_undo(self._stop_recording)
        patcher.on_undo(self._unhook)

    def watch(self, module: nn.Module) -> None:
        """The top module is known (``limits/steps.py``): watch its forwards."""
        if self.model is not None:
            return
        self.model = module
        # Marked as the job's: the script may save the whole model (torch.save(model))
        # while they are on it, and the capture they hold cannot be pickled.
        self._hooks = [
            module.register_forward_pre_hook(job_hook(lambda m, a: self._before_forward(m, a))),
            module.register_forward_hook(
                job_hook(lambda m, a, k, o: self._after_forward(m, a, k, o)), with_kwargs=True
            ),
        ]
        # This forward found the module: its pre-hooks were read before ours was added.
        self._before_forward(module, ())

    def _unhook(self) -> None:
        while self._hooks:
            self._hooks.pop().remove()

    def _before_forward(self, module: nn.Module, args: Any) -> None:
        self._in_forward += 1
        if self._mode is not None and self._mode.inert:
            self._stop_recording()  # done: every torch call the script makes goes through it
        if self.state == "waiting" and self._training(module):
            self._start(module)
        # Hand-written SGD (no optimizer, as limits/steps.py tells steps): the next step
        # begins. With an optimizer, a forward after backward is the next micro-step.
        if (
            self.state == "recording"
            and not self.recorder.optimizer_seen
            and self._backward_seen()
            and self._training(module)
        ):
            self._captured(None)

    def _after_forward(self, module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        self._in_forward = max(self._in_forward - 1, 0)
        if not self._training(module) or self.state != "recording":
            return
        if self._backward_seen():
            return  # a later micro-step of gradient accumulation
        if len(self.events) >= MAX_RECORDED_CALLS:
            self._inert()  # forwards without a backward: no training step to forecast
            return
        self.events.append(
            Forward(
                args=self._describe(args),
                kwargs=self._describe(kwargs),
                outputs=self._track(output),
                autocast=self._autocast_on(),
            )
        )

    def _start(self, module: nn.Module) -> None:
        self.state = "recording"
        self._names = {id(t): n for n, t in replayed_module(module).named_parameters()}
        self._names |= {id(t): n for n, t in replayed_module(module).named_buffers()}
        self.training = {m: m.training for m in module.modules()}
        self._autocast_on()
        self._mode = _StepRecorder(self)
        self._mode.__enter__()  # type: ignore[no-untyped-call]

    def _training(self, module: nn.Module) -> bool:
        return module.training and torch.is_grad_enabled()

    def _backward_seen(self) -> bool:
        return bool(self.backwards) or any(isinstance(e, Backward) for e in self.events)

    def _autocast_on(self) -> bool:
        """Whether the step's code runs in an autocast region now; the first one's dtype is
        the one the replay uses."""
        dtype = self.cuda_autocast()
        if dtype is None and torch.is_autocast_enabled(self.device.type):
            dtype = torch.get_autocast_dtype(self.device.type)
        if dtype is not None and self.autocast_dtype is None:
            self.autocast_dtype = dtype
        return dtype is not None

    def _optimizer_step(self, optimizer: Optimizer) -> None:
        if self.state != "recording" or self.model is None:
            return
        ours = {id(p) for p in self.model.parameters()}
        if any(id(p) in ours for g in optimizer.param_groups for p in g["params"]):
            self._captured(optimizer)

    def _captured(self, optimizer: Optimizer | None) -> None:
        self.optimizer = optimizer
        self.state = "captured"
        self._stop_recording()
        self._unhook()  # nothing more to watch
        if not any(isinstance(e, Backward) for e in self.events) and self.loss_note is None:
            self.loss_note = "no backward call on the step's tensors was seen"

    def on_loss(self, step: int, value: float) -> None:
        if self.state == "recording":
            self.backwards += 1

    # -- the loss's calls ------------------------------------------------------------

    def backward_called(self, args: Any, kwargs: Any) -> None:
        tensors = args[0] if args else kwargs.get("tensors")
        for tensor in pytree.tree_leaves(tensors):
            ref = self._ref(tensor)
            if isinstance(ref, Ref):
                self.events.append(Backward(ref))
                break
        self._inert()

    def called(self, func: Any, args: Any, kwargs: Any, out: Any) -> None:
        inputs = pytree.tree_leaves((args, kwargs))
        if not any(isinstance(self._ref(t), Ref) for t in inputs if isinstance(t, torch.Tensor)):
            return
        if not any(isinstance(t, torch.Tensor) for t in pytree.tree_leaves(out)):
            return
        if len(self.events) >= MAX_RECORDED_CALLS:
            self.loss_note = f"the loss's code made more than {MAX_RECORDED_CALLS} torch calls"
            self._inert()
            return
        described = (self._describe(args), self._describe(kwargs))
        self.events.append(Call(func, *described, self._track(out), self._autocast_on()))

    def read(self, name: str, value: Any) -> None:
        if len(self.reads) < MAX_READS:
            self.reads.append((name, value))

    def _inert(self) -> None:
        if self._mode is not None:
            self._mode.inert = True

    def _stop_recording(self) -> None:
        """Leave the mode stack; a mode the script pushed above ours keeps ours, inert."""
        mode, self._mode = self._mode, None
        if mode is None:
            return
        mode.inert = True
        stack = torch.overrides._get_current_function_mode_stack()  # type: ignore[no-untyped-call]
        if stack and stack[-1] is mode:
            mode.__exit__(None, None, None)

    def _describe(self, tree: Any) -> Any:
        return pytree.tree_map_only(torch.Tensor, self._ref, tree)

    def _ref(self, tensor: torch.Tensor) -> Ref | ParamRef | TensorSpec:
        entry = self._tracked.get(id(tensor))
        if entry is not None and entry[1]() is tensor:
            return Ref(entry[0])
        if id(tensor) in self._names:
            return ParamRef(self._names[id(tensor)])
        return TensorSpec.of(tensor)

    def _track(self, output: Any) -> list[int | None]:
        indices: list[int | None] = []
        for leaf in pytree.tree_leaves(output):
            if not isinstance(leaf, torch.Tensor):
                indices.append(None)
                continue
            ref = self._ref(leaf)
            if isinstance(ref, Ref):
                index = ref.index
            else:
                index, self._next_ref = self._next_ref, self._next_ref + 1
            self._tracked[id(leaf)] = (index, weakref.ref(leaf))
            indices.append(index)
        return indices

    # -- the forecast -----------------------------------------------------------------

    def on_job_end(self) -> None:
        self._stop_recording()
        if self.state == "recording" and self._backward_seen():
            self._captured(None)

    def on_result(self, result: JobResult) -> None:
        stopped = result.stop_reason if result.status == "stopped" else None
        result.memory_forecast = self.forecast(stopped)

    def forecast(self, stopped: str | None = None) -> MemoryForecast:
        if isinstance(self.full_size, str):
            return MemoryForecast(error=self.full_size)
        if self.full_size is not None:
            self.events, self.reads = self.full_size.events, self.full_size.reads
            self.autocast_dtype, self.loss_note = self.full_size.autocast_dtype, self.full_size.note
        if self.state != "captured" or self.model is None:
            # A budget that ended the job first (an evaluation before training) is named:
            # the job's stop line says how to lift it.
            before = f" before the job stopped ({stopped})" if stopped else ""
            return MemoryForecast(
                error=f"no training step of the model ran{before}, and the forecast "
                "replays the first one"
            )
        try:  # the recipe too: what it reads from the capture may not be there
            recipe = StepRecipe(
                model=replayed_module(self.model),
                optimizer=self.optimizer,
                events=self.events,
                backwards=max(self.backwards, 1),
                autocast_dtype=self.autocast_dtype,
                batch_size=batch_size_of(self._inputs(), reads_seq_first(self.model)),
                loss_note=self.loss_note,
                reads=self.reads,
                gradient_buckets=gradient_buckets(self.model),
            )
            with self.recorder.pause(), self._as_trained():
                forecast = make_forecast(recipe, self.device, self.devices, self._precision())
        except Exception as exc:  # a step that cannot replay must not fail the script
            log.info("memory forecast failed", exc_info=exc)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            # Asked for and not made: Quickdev's own error, which the verdict says.
            problems.own_error(self.feature, exc, "the memory forecast could not replay the step")
            return MemoryForecast(error=f"the step did not replay: {type(exc).__name__}: {first}")
        log.info("memory forecast made in %.2f s", forecast.duration_s)
        return forecast

    def _inputs(self) -> list[TensorSpec]:
        first = next(e for e in self.events if isinstance(e, Forward))
        leaves = pytree.tree_leaves((first.args, first.kwargs))
        return [leaf for leaf in leaves if isinstance(leaf, TensorSpec)]

    @contextmanager
    def _as_trained(self) -> Iterator[None]:
        """The modules' train/eval flags as they were in the step (the script may have
        switched to eval for its test afterwards)."""
        now = {m: m.training for m in self.training}
        for module, training in self.training.items():
            module.training = training
        try:
            yield
        finally:
            for module, training in now.items():
                module.training = training

    def _precision(self) -> str:
        assert self.model is not None
        dtypes = [p.dtype for p in self.model.parameters()]
        weights = max(set(dtypes), key=dtypes.count) if dtypes else torch.float32
        label = f"{str(weights).removeprefix('torch.')} weights"
        if self.autocast_dtype is not None:
            label += f", autocast {str(self.autocast_dtype).removeprefix('torch.')}"
        return label


class _StepRecorder(TorchFunctionMode):
    """On from the start of the first training forward until backward: records the values
    read from tensors, and the calls made on the step's tensors outside the model's
    forwards (the loss's)."""

    def __init__(self, capture: StepCapture) -> None:
        super().__init__()
        self.capture = capture
        self.inert = False

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if self.inert:
            return func(*args, **kwargs)
        name = read_name(func)
        if name is not None:
            out = func(*args, **kwargs)
            self.capture.read(name, out)
            return out
        if self.capture._in_forward:
            return func(*args, **kwargs)
        # Tensor.backward or torch.autograd.backward; by name, as the job's own loss
        # recording replaces Tensor.backward on the class.
        if getattr(func, "__name__", "") == "backward":
            self.capture.backward_called(args, kwargs)
            return func(*args, **kwargs)
        out = func(*args, **kwargs)
        self.capture.called(func, args, kwargs, out)
        return out
