"""Replay one observed training step on fake tensors and measure what it would hold.

The model's parameters and buffers are swapped for fake ones (on the job's device: the
CPU stand-in, or the GPU) for the length of the replay and put back after; the
optimizer is a fresh instance of the script's class over the fake parameters, its
state made by one warm-up step, so the measured step is a steady one (state already
there, as from the second step on). Fake tensors hold no storage: the replay of a
7B-parameter model's step takes a few hundred MB of host memory. The step it replays is
the script's own first one, which ran for real on this machine before (its model, batch
and optimizer at their real sizes).
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.optim import Optimizer
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from quickdev.forecast.cuda_choices import CudaChoices
from quickdev.forecast.module_figures import ModuleFigures, module_figures
from quickdev.forecast.reads import RecordedReads
from quickdev.forecast.remedies import Remedy, applied, checkpointing
from quickdev.forecast.step import (
    Backward,
    Call,
    Event,
    Forward,
    ParamRef,
    Ref,
    StepRecipe,
    TensorSpec,
    leaves,
    scaled_shape,
)
from quickdev.forecast.tracker import PeakAt, StepTracker


@dataclass
class Measurement:
    batch_size: int | None
    peak_allocated: int  # as torch.cuda.max_memory_allocated would count it
    peak_reserved: int  # segments the caching allocator would hold
    categories: dict[str, int]
    peak_at: PeakAt
    loss_replayed: bool
    modules: list[ModuleFigures] = field(default_factory=list)


class ReplayError(RuntimeError):
    """The step could not be replayed; the message says which part and why."""


def replay(
    recipe: StepRecipe,
    device: torch.device,
    batch_size: int | None,
    *,
    detail: bool = False,
    remedy: Remedy | None = None,
) -> Measurement:
    """What the step needs at ``batch_size``; with ``remedy``, the step as it would be
    with that change made (``remedies``)."""
    recipe = applied(recipe, remedy)
    # On a GPU, torch itself chooses; elsewhere CUDA's choices are made for it.
    cuda_choices = CudaChoices(recipe.autocast_dtype) if device.type != "cuda" else None
    # The device the script computed on: its tensors there replay on ``device`` (a script
    # run on the CPU of a GPU machine is forecast for the GPU, its batches with it).
    script_device = next((p.device.type for p in recipe.model.parameters()), device.type)
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with (
        mode,
        torch.enable_grad(),
        _fake_parameters(recipe.model, device) as fakes,
        _no_autocast(device),
        checkpointing(recipe.model, remedy, cuda_choices),
    ):
        optimizer = _fake_optimizer(recipe.optimizer, fakes) if recipe.optimizer else None
        if optimizer is not None:
            _warm_up(optimizer)
        tracker = StepTracker(type(recipe.model).__name__)
        tracker.track_external(recipe.model, *([optimizer] if optimizer else []))
        buckets = _gradient_buckets(recipe.gradient_buckets, device, tracker)
        runner = _Runner(recipe, device, batch_size, tracker, cuda_choices, script_device)
        with tracker:
            loss_replayed = runner.run(micro_steps=min(recipe.backwards, 2))
            if optimizer is not None:
                tracker.phase = "optimizer step"
                optimizer.step()
        modules = module_figures(recipe.model, optimizer, tracker) if detail else []
        del buckets
        return Measurement(
            batch_size=batch_size,
            peak_allocated=tracker.allocator.peak_allocated,
            peak_reserved=tracker.allocator.peak_reserved,
            categories=tracker.peak_categories(),
            peak_at=tracker.peak_at,
            loss_replayed=loss_replayed,
            modules=modules,
        )


class _Runner:
    """Runs the recipe's events: forwards, the loss's calls, backward."""

    def __init__(
        self,
        recipe: StepRecipe,
        device: torch.device,
        batch_size: int | None,
        tracker: StepTracker,
        cuda_choices: CudaChoices | None,
        script_device: str,
    ) -> None:
        self.recipe = recipe
        self.device = device
        self.on_device = {device.type, script_device}  # input device types that follow it
        self.observed = recipe.batch_size
        self.batch_size = batch_size
        self.tracker = tracker
        self.named = dict(recipe.model.named_parameters()) | dict(recipe.model.named_buffers())
        self.cuda_choices = cuda_choices
        self.reads = RecordedReads(recipe.reads)

    def run(self, micro_steps: int) -> bool:
        """Returns whether the script's own loss was replayed (else it was stood in for).
        A second micro-step (gradient accumulation) runs with every gradient there; the
        per-module figures are its own."""
        replayed = True
        for micro_step in range(micro_steps):
            if micro_step:
                self.tracker.reset_mod_stats()
            replayed = self._micro_step()
        return replayed

    def _micro_step(self) -> bool:
        self.reads.restart()
        made: dict[int, torch.Tensor] = {}
        outputs: list[torch.Tensor] = []
        for event in self.recipe.events:
            if isinstance(event, Backward):
                self.tracker.phase = "backward"
                loss = made[event.of.index]
                # out.backward(gradient): a gradient of the output's size, as the script gave.
                gradient = None if loss.numel() == 1 else torch.ones_like(loss)
                torch.autograd.backward(loss, gradient)
                return True
            self.tracker.phase = "forward" if isinstance(event, Forward) else "loss"
            try:
                result = self._call(event, made)
            except Exception:
                if isinstance(event, Forward):
                    raise
                break  # the loss's code did not replay: stand in for it below
            flat = leaves(result)
            for index, value in zip(event.outputs, flat, strict=False):
                if index is not None and isinstance(value, torch.Tensor):
                    made[index] = value
            if isinstance(event, Forward):
                outputs += [v for v in flat if isinstance(v, torch.Tensor)]
        # No backward seen, or the loss's code failed: backward from the model's outputs
        # with a dense gradient of their size, as a loss over them would give.
        self.tracker.phase = "backward"
        trainable = [o for o in outputs if o.requires_grad]
        if not trainable:
            raise ReplayError("the model's outputs do not require grad: no backward to replay")
        torch.autograd.backward(trainable, [torch.ones_like(o) for o in trainable])
        return False

    def _call(self, event: Event, made: dict[int, torch.Tensor]) -> Any:
        assert not isinstance(event, Backward)
        args, kwargs = self._materialize((event.args, event.kwargs), made)
        if isinstance(event, Call):
            args = self._rescale_shape_args(event, args)
        with self._modes(event.autocast):
            if isinstance(event, Forward):
                return self.recipe.model(*args, **kwargs)
            return event.func(*args, **kwargs)

    def _materialize(self, tree: Any, made: dict[int, torch.Tensor]) -> Any:
        def real(leaf: Any) -> Any:
            if isinstance(leaf, TensorSpec):
                shape = scaled_shape(leaf.shape, self.observed, self.batch_size)
                on = self.device if leaf.device_type in self.on_device else torch.device("cpu")
                tensor = torch.empty(shape, dtype=leaf.dtype, device=on)
                return tensor.requires_grad_(True) if leaf.requires_grad else tensor
            if isinstance(leaf, Ref):
                return made[leaf.index]
            if isinstance(leaf, ParamRef):
                return self.named[leaf.name]
            return leaf

        return pytree.tree_map(real, tree)

    def _rescale_shape_args(self, event: Call, args: Any) -> Any:
        """``x.view(B * T, V)`` recorded at the observed batch: its batch-sized entry
        follows the replayed batch size."""
        name = getattr(event.func, "__name__", "")
        observed, new = self.observed, self.batch_size
        if name not in ("view", "reshape") or not observed or not new or observed == new:
            return args
        shape = list(args[1]) if len(args) == 2 and isinstance(args[1], (tuple, list)) else None
        entries = shape if shape is not None else list(args[1:])
        for i, size in enumerate(entries):
            if isinstance(size, int) and size > 0 and size % observed == 0:
                entries[i] = size // observed * new
                break
        return (args[0], tuple(entries)) if shape is not None else (args[0], *entries)

    def _modes(self, autocast: bool) -> contextlib.AbstractContextManager[Any]:
        """Autocast as the script had it, CUDA's choices off a GPU, the recorded reads."""
        dtype = self.recipe.autocast_dtype
        stack = contextlib.ExitStack()
        stack.enter_context(self.reads)
        if autocast and dtype is not None:
            stack.enter_context(torch.autocast(self.device.type, dtype=dtype))
        if self.cuda_choices is not None:
            stack.enter_context(self.cuda_choices)
        if self.device.type == "cuda":
            stack.enter_context(RecurrentWithoutCudnn(dtype if autocast else None))
        return stack


# What nn.LSTM, nn.GRU and nn.RNN call (``torch._VF``), packed sequences or not.
_RECURRENT = frozenset(
    getattr(torch._C._VariableFunctions, name) for name in ("lstm", "gru", "rnn_tanh", "rnn_relu")
)


class RecurrentWithoutCudnn(TorchFunctionMode):
    """A recurrent layer replayed on a GPU runs on torch's own CUDA kernels, not cuDNN's.

    cuDNN's RNN reads its weights' addresses to find (or make) one flat weight buffer, and
    under autocast copies them into a 16-bit one; fake tensors have no addresses, so the
    replay failed there ("weight_buf" None, CUDNN_STATUS_BAD_PARAM). Torch's kernels keep
    each step's gates and cell state, as cuDNN's reserve space does; cuDNN's own buffers are
    not counted (docs/forecast.md). In an autocast region (``dtype``) the weights, input and
    state are cast once, as cuDNN's autocast does, then computed without autocast, which
    would cast each weight again at every time step (a transposed view, which its cache
    does not keep): an LSTM of 2 x 650 over 35 steps was forecast 1,020 MiB on an H200
    that allocated 645.
    """

    def __init__(self, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        self.dtype = dtype

    def __torch_function__(
        self, func: Any, types: Any, args: Any = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if func not in _RECURRENT:
            return func(*args, **kwargs)
        enabled = torch._C._get_cudnn_enabled()
        torch._C._set_cudnn_enabled(False)
        try:
            if self.dtype is None:
                return func(*args, **kwargs)
            args, kwargs = pytree.tree_map(self._cast, (args, kwargs))
            with torch.autocast("cuda", enabled=False):
                return func(*args, **kwargs)
        finally:
            torch._C._set_cudnn_enabled(enabled)

    def _cast(self, leaf: Any) -> Any:
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
            return leaf.to(self.dtype)
        return leaf


@contextlib.contextmanager
def _no_autocast(device: torch.device) -> Iterator[None]:
    """The replay sets autocast per event itself; a region of the script's still open must
    not leak in. Not an ``autocast(enabled=False)`` region: nested in one, the replay's
    own regions would keep their cast weights cached past the forward."""
    enabled = torch.is_autocast_enabled(device.type)
    torch.set_autocast_enabled(device.type, False)
    try:
        yield
    finally:
        torch.set_autocast_enabled(device.type, enabled)


@contextlib.contextmanager
def _fake_parameters(model: nn.Module, device: torch.device) -> Iterator[dict[int, torch.Tensor]]:
    """Swap every parameter and buffer for a fake one of its shape and dtype; put the
    originals back after. Returns real id -> fake (tied weights stay tied)."""
    fakes: dict[int, torch.Tensor] = {}
    swapped: list[tuple[dict[str, Any], str, Any]] = []

    def fake(tensor: torch.Tensor, parameter: bool) -> torch.Tensor:
        if id(tensor) not in fakes:
            made = torch.empty(tensor.shape, dtype=tensor.dtype, device=device)
            fakes[id(tensor)] = (
                nn.Parameter(made, requires_grad=tensor.requires_grad) if parameter else made
            )
        return fakes[id(tensor)]

    try:
        for module in model.modules():
            tables: list[tuple[dict[str, Any], bool]] = [
                (module._parameters, True),
                (module._buffers, False),
            ]
            for table, parameter in tables:
                for name, tensor in list(table.items()):
                    if tensor is not None:
                        swapped.append((table, name, tensor))
                        table[name] = fake(tensor, parameter)
        yield fakes
    finally:
        for table, name, tensor in reversed(swapped):
            table[name] = tensor


def _gradient_buckets(
    sizes: list[int], device: torch.device, tracker: StepTracker
) -> list[torch.Tensor]:
    """DDP's gradient buckets, there through the whole step as in the real one (its reducer
    makes them with the model), counted as gradients."""
    buckets = [torch.empty(size, dtype=torch.uint8, device=device) for size in sizes]
    for bucket in buckets:
        tracker.track_gradients(bucket)
    return buckets


def _fake_optimizer(optimizer: Optimizer, fakes: dict[int, torch.Tensor]) -> Optimizer:
    """An optimizer of the script's class and settings over the fake parameters, made
    without calling its constructor (whose arguments are not known) and without the
    original's hooks or bound methods (an LR scheduler wraps ``step`` on the instance)."""
    clone = object.__new__(type(optimizer))
    for key, value in vars(optimizer).items():
        if key in ("state", "param_groups") or (callable(value) and not isinstance(value, type)):
            continue
        clone.__dict__[key] = OrderedDict() if key.endswith("_hooks") else value
    clone.state = defaultdict(dict)
    clone.param_groups = []
    for group in optimizer.param_groups:
        params = [fakes[id(p)] for p in group["params"] if id(p) in fakes]
        copied = {**group, "params": params}
        # On a GPU, torch picks the foreach implementation when none is set: its
        # temporaries span every parameter at once.
        if copied.get("foreach", False) is None and not copied.get("fused"):
            copied["foreach"] = True
        clone.param_groups.append(copied)
    return clone


def _warm_up(optimizer: Optimizer) -> None:
    """One step on zero gradients, outside the tracker: the state the measured step
    finds is there, as in every step after the first."""
    params = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]
    for p in params:
        p.grad = torch.zeros_like(p)
    optimizer.step()
    for p in params:
        p.grad = None
