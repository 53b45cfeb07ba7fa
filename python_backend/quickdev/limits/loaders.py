"""DataLoader limits: at most N batches per pass, ``len()`` agrees, no worker processes.

Patched on the DataLoader class itself, so subclasses and loaders that libraries
(Lightning) build are limited too.
"""

from __future__ import annotations

import functools
import inspect
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch
from torch.utils.data import DataLoader

from quickdev.limits.own_work import own_work
from quickdev.limits.patching import Patcher
from quickdev.limits.profiler_marks import mark_call_site
from quickdev.limits.recorder import PassStart, Recorder
from quickdev.limits.user_code import caller_origin
from quickdev.rundir.result import LoaderStats
from quickdev.rundir.shapes import Cut

if TYPE_CHECKING:
    from quickdev.limits.step_cost import StepCostCheck

_STATS_ATTR = "_quickdev_stats"
# Without a batch limit, only the first batches of each pass are inspected for NaN/Inf.
_UNLIMITED_CHECKED_BATCHES = 2
_SIGNATURE_MAX_CHARS = 300


def install(
    patcher: Patcher,
    recorder: Recorder,
    batches: int | None,
    step_cost: StepCostCheck | None = None,
) -> None:
    """``step_cost``: decides, at a loader's first batch, whether its steps compute at a
    smaller batch (``limits/step_cost``)."""
    original_init = DataLoader.__init__
    original_iter = DataLoader.__iter__
    original_len = DataLoader.__len__
    signature = inspect.signature(original_init)
    cuda = torch.cuda.is_available()

    @functools.wraps(original_init)
    def __init__(loader: DataLoader[Any], *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(loader, *args, **kwargs)
        arguments = bound.arguments
        # Worker processes would hide Dataset.__getitem__ from the debugger and cost
        # start-up time; these options are only valid with workers.
        arguments["num_workers"] = 0
        arguments.pop("prefetch_factor", None)
        arguments.pop("persistent_workers", None)
        arguments.pop("multiprocessing_context", None)
        if not cuda:
            arguments.pop("pin_memory", None)
            arguments.pop("pin_memory_device", None)
        original_init(*bound.args, **bound.kwargs)
        if not hasattr(loader, _STATS_ATTR):
            object.__setattr__(loader, _STATS_ATTR, recorder.new_loader(caller_origin()))

    def __iter__(loader: DataLoader[Any]) -> Iterator[Any]:
        stats = _stats_of(loader, recorder)
        try:
            length: int | None = original_len(loader)
        except TypeError:  # an iterable dataset without a length
            length = None
        iterator = original_iter(loader)
        limited = _limited(loader, iterator, stats, recorder, batches, length, step_cost)
        if step_cost is not None:
            step_cost.new_pass(loader, iterator, limited)
        return limited

    def __len__(loader: DataLoader[Any]) -> int:
        length: int = original_len(loader)
        if batches is None or not recorder.budget.batches_bound_training:
            # The hunt trains past --batches: a schedule sized by len() must not run out.
            return length
        return min(length, batches)

    patcher.set(DataLoader, "__init__", __init__)
    patcher.set(DataLoader, "__iter__", __iter__)
    patcher.set(DataLoader, "__len__", __len__)


def _stats_of(loader: DataLoader[Any], recorder: Recorder) -> LoaderStats:
    stats: LoaderStats | None = getattr(loader, _STATS_ATTR, None)
    if stats is None:  # built before the limits were installed (in-process API)
        stats = recorder.new_loader(caller_origin(3))
        object.__setattr__(loader, _STATS_ATTR, stats)
    return stats


def _limited(
    loader: DataLoader[Any],
    iterator: Iterator[Any],
    stats: LoaderStats,
    recorder: Recorder,
    batches: int | None,
    length: int | None,
    step_cost: StepCostCheck | None,
) -> Iterator[Any]:
    # Runs at the first next(); an endless trainer's extra pass stops at its first
    # training forward (the train_passes budget, see Recorder.pass_starting).
    opened = recorder.pass_starting(stats)
    checked = batches if batches is not None else _UNLIMITED_CHECKED_BATCHES
    count = 0
    hunt = recorder.nonfinite
    if hunt is not None:
        hunt.watch_loader(iterator)
    try:
        while batches is None or count < batches or _trains_on(recorder, opened):
            mark_call_site()  # the user's loop line, in a profile
            started = time.perf_counter()
            if hunt is not None:
                hunt.fetching = True
            try:
                batch = next(iterator)
            except StopIteration:
                return
            finally:
                if hunt is not None:
                    hunt.fetching = False
            wait_s = time.perf_counter() - started
            count += 1
            if count == 1 and step_cost is not None:
                # The script's own full-size step checked on fake tensors, maybe its
                # arithmetic made smaller, before the step runs (the batch may have been
                # a first look at its first samples: this is the one to hand on).
                batch = step_cost.first_batch(loader, iterator, stats, batch)
                in_probe = step_cost.probe_batches(batch)
                if in_probe is not None:  # this process is the check's copy of the job
                    yield from in_probe
                    return
            if count <= checked:
                with own_work():  # not the user's ops: no mode sees them, no profile counts them
                    if not stats.batch_signature:
                        stats.batch_signature = batch_signature(batch)
                    if not stats.nonfinite and hunt is None and has_nonfinite(batch):
                        stats.nonfinite = True
            if hunt is not None:
                hunt.batch_taken(stats, batch)
            recorder.batch(stats, wait_s)
            yield batch
        if recorder.shapes is not None and (length is None or length > count):
            # The pass was cut short: the frame asking for the next batch is the loop's.
            frame = sys._getframe(1)
            line = frame.f_lineno or frame.f_code.co_firstlineno
            cut = Cut(frame.f_code.co_filename, line, "batches", count, "batches")
            recorder.shapes.budget_cut(frame, line, cut)
    finally:
        # Also when the loop breaks out early: a pass that trained is an epoch.
        recorder.pass_ended(stats, opened)


def _trains_on(recorder: Recorder, opened: PassStart) -> bool:
    """The NaN hunt lets a pass that took training steps run past ``--batches``: its step
    budget, not one epoch of two batches, bounds the training."""
    return not recorder.budget.batches_bound_training and recorder.steps > opened.steps


def batch_signature(batch: Any) -> str:
    """Nested shapes, dtypes and devices, e.g. ``(float32[32, 8] cpu, int64[32] cpu)``."""
    text = _signature(batch, depth=0)
    if len(text) > _SIGNATURE_MAX_CHARS:
        text = text[: _SIGNATURE_MAX_CHARS - 1] + "…"
    return text


def _signature(value: Any, depth: int) -> str:
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        shape = ", ".join(str(d) for d in value.shape)
        return f"{dtype}[{shape}] {value.device}"
    if depth > 4:
        return "…"
    if isinstance(value, dict):
        items = ", ".join(f"{k}: {_signature(v, depth + 1)}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_signature(v, depth + 1) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return type(value).__name__


def has_nonfinite(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() or value.is_complex():
            return not bool(torch.isfinite(value).all())
        return False
    if isinstance(value, dict):
        return any(has_nonfinite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_nonfinite(v) for v in value)
    return False
