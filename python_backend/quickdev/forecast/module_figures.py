"""The forecast per top-level module: what each part of the model holds.

"Top-level" is the model's first level of layers that mean something to its author:
containers without a forward of their own (``ModuleList``, ``ModuleDict``) are opened,
and so is a wrapper holding most of the parameters (a Hugging Face head's base model),
so a GPT reads as its embeddings, its blocks and its head.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.distributed._tools.mem_tracker import _MemRefType, _ModState
from torch.optim import Optimizer

from quickdev.forecast.allocator import block_size
from quickdev.forecast.tracker import StepTracker

MAX_MODULES = 64


@dataclass
class ModuleFigures:
    name: str
    parameters: int
    gradients: int
    optimizer_state: int
    activations: int  # what its forwards leave alive for backward (outputs included)
    peak: int  # the step's total memory at this module's own peak (forward or backward)


def top_level_modules(model: nn.Module) -> list[tuple[str, nn.Module]]:
    total = _count(model)
    found = [(name, child) for name, child in model.named_children()]
    if not found:
        return [("", model)]
    changed = True
    while changed and len(found) < MAX_MODULES:
        changed = False
        for i, (name, module) in enumerate(found):
            children = list(module.named_children())
            container = isinstance(module, (nn.ModuleList, nn.ModuleDict))
            wrapper = total and _count(module) > total / 2 and len(found) < 4
            if children and (container or wrapper):
                found[i : i + 1] = [(f"{name}.{n}", c) for n, c in children]
                changed = True
                break
    return found[:MAX_MODULES]


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def module_figures(
    model: nn.Module, optimizer: Optimizer | None, tracker: StepTracker
) -> list[ModuleFigures]:
    seen: set[int] = set()  # a tied weight counts once, with its first owner
    figures = []
    for name, module in top_level_modules(model):
        params = [p for p in module.parameters() if id(p) not in seen]
        seen.update(id(p) for p in params)
        state = optimizer.state if optimizer is not None else {}
        figures.append(
            ModuleFigures(
                name=name or type(model).__name__,
                parameters=sum(_bytes(p) for p in params),
                gradients=sum(_bytes(p) for p in params if p.requires_grad),
                optimizer_state=sum(
                    _bytes(v)
                    for p in params
                    for v in state.get(p, {}).values()
                    if isinstance(v, torch.Tensor) and v.dim() > 0
                ),
                activations=_activations(tracker, module),
                peak=_peak(tracker, module),
            )
        )
    return figures


def _bytes(t: torch.Tensor) -> int:
    return block_size(t.numel() * t.element_size())


def _activations(tracker: StepTracker, module: nn.Module) -> int:
    stats = tracker.memory_tracking.get(module)  # type: ignore[no-untyped-call]
    if stats is None:
        return 0
    before = stats.snapshots.get(_ModState.PRE_FW, [])
    after = stats.snapshots.get(_ModState.POST_FW, [])
    total = 0
    for pre, post in zip(before, after, strict=False):
        for device, snapshot in post.items():
            start = pre.get(device, {})
            for kind in (_MemRefType.ACT, _MemRefType.OTH):
                total += snapshot.get(kind, 0) - start.get(kind, 0)
    return max(total, 0)


def _peak(tracker: StepTracker, module: nn.Module) -> int:
    stats = tracker.memory_tracking.get(module)  # type: ignore[no-untyped-call]
    if stats is None:
        return 0
    peaks = [
        snapshot.get("Total", 0)
        for state in (_ModState.PEAK_FW, _ModState.PEAK_BW)
        for per_call in stats.snapshots.get(state, [])
        for snapshot in per_call.values()
    ]
    return max(peaks, default=0)
