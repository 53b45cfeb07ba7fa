"""Changes to a training step that a person can make to need less memory, as the replay
applies them: the step's forwards and loss in bfloat16 autocast, activation checkpointing
of some of the model's modules. The forecast advises one only after replaying the step
with it (``forecast.advice``): a remedy is a claim about the step, checked like the step.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from quickdev.forecast.step import Backward, StepRecipe
from quickdev.rundir.memory import ModuleMemory

# The autocast dtype advised: bfloat16 needs no GradScaler and keeps float32's range.
AUTOCAST = torch.bfloat16


@dataclass(frozen=True)
class Remedy:
    name: str  # "bfloat16 autocast", "activation checkpointing of each transformer.h.* block"
    how: str = ""  # the code that makes it, for the advice
    autocast: torch.dtype | None = None  # the step's forwards and loss under autocast
    checkpointed: tuple[str, ...] = ()  # modules (qualified names) whose forwards recompute

    @property
    def words(self) -> str:
        return f"{self.name} ({self.how})" if self.how else self.name


def candidates(recipe: StepRecipe, modules: list[ModuleMemory]) -> list[Remedy]:
    """The remedies worth a replay for this step: checkpointing the model's repeated
    blocks (or, with none, its module with the most activations that holds modules of its
    own: checkpointing keeps a single layer's inputs, which is what the layer keeps), bfloat16
    autocast where the step runs in float32, and the two together."""
    found: list[Remedy] = []
    checkpointed = _checkpointed_modules(recipe.model, modules)
    if checkpointed is not None:
        names, shown = checkpointed
        found.append(
            Remedy(
                f"activation checkpointing of {shown}",
                "torch.utils.checkpoint.checkpoint(module, x, use_reentrant=False)",
                checkpointed=names,
            )
        )
    if recipe.autocast_dtype is None and _float32_weights(recipe.model):
        how = "with torch.autocast('cuda', dtype=torch.bfloat16): around forward and loss"
        found.append(Remedy("bfloat16 autocast", how, autocast=AUTOCAST))
    if len(found) == 2:
        both = f"{found[1].name} with {found[0].name}"
        found.append(Remedy(both, autocast=AUTOCAST, checkpointed=found[0].checkpointed))
    return found


def _checkpointed_modules(
    model: nn.Module, modules: list[ModuleMemory]
) -> tuple[tuple[str, ...], str] | None:
    """(the modules to checkpoint, how they are named): ``each transformer.h.* block``
    for blocks of one class that repeat, else the module with the most activations."""
    by_name = dict(model.named_modules())
    groups: dict[str, list[ModuleMemory]] = {}
    for module in modules:
        stem, _, last = module.name.rpartition(".")
        if last.isdigit() and module.name in by_name:
            groups.setdefault(stem, []).append(module)
    repeated = [
        group
        for group in groups.values()
        if len(group) > 1 and len({type(by_name[m.name]) for m in group}) == 1
    ]
    if repeated:
        blocks = max(repeated, key=lambda group: sum(m.activations for m in group))
        stem = blocks[0].name.rpartition(".")[0]
        shown = (
            f"each {stem}.* block"
            if stem
            else f"each of the model's modules 0 to {len(blocks) - 1}"
        )
        return tuple(m.name for m in blocks), shown
    holders = [m for m in modules if m.name in by_name and any(by_name[m.name].children())]
    heaviest = max(holders, key=lambda m: m.activations, default=None)
    if heaviest is None or heaviest.activations == 0:
        return None
    return (heaviest.name,), heaviest.name


def _float32_weights(model: nn.Module) -> bool:
    dtypes = Counter(p.dtype for p in model.parameters())
    return bool(dtypes) and dtypes.most_common(1)[0][0] == torch.float32


def applied(recipe: StepRecipe, remedy: Remedy | None) -> StepRecipe:
    """The recipe with ``remedy``'s autocast: every forward and call of the loss in it."""
    if remedy is None or remedy.autocast is None:
        return recipe
    events = [
        e if isinstance(e, Backward) else dataclasses.replace(e, autocast=True)
        for e in recipe.events
    ]
    return dataclasses.replace(recipe, events=events, autocast_dtype=remedy.autocast)


@contextlib.contextmanager
def checkpointing(
    model: nn.Module, remedy: Remedy | None, modes: contextlib.AbstractContextManager[Any] | None
) -> Iterator[None]:
    """``remedy``'s modules run their forwards under ``torch.utils.checkpoint`` (not
    re-entrant, as advised) for the length of the replay; put back after. ``modes``: the
    replay's own (CUDA's choices on the CPU stand-in), entered again around the forward's
    second run in backward, where torch function modes do not reach."""
    if remedy is None or not remedy.checkpointed:
        yield
        return
    by_name = dict(model.named_modules())
    wrapped: list[tuple[nn.Module, Any]] = []
    try:
        for name in remedy.checkpointed:
            module = by_name.get(name)
            if module is None:
                continue
            own = module.__dict__.get("forward")  # a forward set on the instance, if any
            wrapped.append((module, own))
            module.forward = _checkpointed(module.forward, modes)
        yield
    finally:
        for module, own in wrapped:
            if own is None:
                del module.forward
            else:
                module.forward = own


def _checkpointed(forward: Any, modes: contextlib.AbstractContextManager[Any] | None) -> Any:
    def again(*args: Any, **kwargs: Any) -> Any:
        with modes if modes is not None else contextlib.nullcontext():
            return forward(*args, **kwargs)

    def run(*args: Any, **kwargs: Any) -> Any:
        return checkpoint(again, *args, use_reentrant=False, **kwargs)

    return run
