"""One training step as the job observed it, in a form that can be replayed on fake tensors.

Tensors are kept as descriptions, never as data: a ``TensorSpec`` (shape, dtype) for
a tensor from outside the step (the batch), a ``Ref`` for one the step made (a model
output, a result of the loss's code), a ``ParamRef`` for the model's own parameters.
The step is a list of events: forwards of the model with their arguments, the torch
calls the script made on their outputs up to ``backward`` (the loss), and backward.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.optim import Optimizer
from torch.utils import _pytree as pytree


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: torch.dtype
    requires_grad: bool = False
    device_type: str = "cpu"

    @classmethod
    def of(cls, tensor: torch.Tensor) -> TensorSpec:
        return cls(tuple(tensor.shape), tensor.dtype, tensor.requires_grad, tensor.device.type)


@dataclass(frozen=True)
class Ref:
    """A tensor the step made: the ``index``-th the recording saw."""

    index: int


@dataclass(frozen=True)
class ParamRef:
    """A parameter or buffer of the model, by qualified name."""

    name: str


@dataclass
class Forward:
    args: Any  # pytrees whose tensor leaves are TensorSpec, Ref or ParamRef
    kwargs: Any
    outputs: list[int | None]  # Ref index of each flattened output leaf (None: no tensor)
    autocast: bool


@dataclass
class Call:
    """A torch function or tensor method the script called on the step's tensors."""

    func: Callable[..., Any]
    args: Any
    kwargs: Any
    outputs: list[int | None]
    autocast: bool


@dataclass
class Backward:
    of: Ref


Event = Forward | Call | Backward


@dataclass
class StepRecipe:
    model: nn.Module
    optimizer: Optimizer | None
    events: list[Event] = field(default_factory=list)
    # Backward calls before the optimizer step: above one, gradients accumulate.
    backwards: int = 1
    # The dtype of the autocast region the step ran in (None: no autocast).
    autocast_dtype: torch.dtype | None = None
    batch_size: int | None = None
    # Why the loss's own code could not be replayed, when it could not.
    loss_note: str | None = None
    # What the real step read from its tensors, in order (forecast/reads.py).
    reads: list[tuple[str, Any]] = field(default_factory=list)
    # Bytes of each gradient bucket DDP keeps beside the gradients (forecast/ddp.py).
    gradient_buckets: list[int] = field(default_factory=list)


def leaves(tree: Any) -> list[Any]:
    return pytree.tree_leaves(tree)


def batch_size_of(inputs: list[TensorSpec], seq_first: bool = False) -> int | None:
    """The batch size of the model's first tensor input (the token ids, the images, the
    source sequence): its first dimension, or its second when the model reads (time,
    batch, ...) inputs (an RNN or attention layer without ``batch_first``). Masks and
    states beside it follow it where they share that size."""
    first = next((s.shape for s in inputs if s.shape), None)
    if first is None:
        return None
    return first[1] if seq_first and len(first) > 1 else first[0]


def reads_seq_first(model: nn.Module) -> bool:
    """Whether the model's first sequence layer (recurrent or attention, which say so in
    ``batch_first``) takes (time, batch, ...) inputs."""
    for module in model.modules():
        if isinstance(module, (nn.RNNBase, nn.MultiheadAttention, nn.Transformer)):
            return not module.batch_first
    return False


def scaled_shape(shape: tuple[int, ...], observed: int | None, new: int | None) -> tuple[int, ...]:
    """``shape`` with its batch dimension (the first of the observed size) set to ``new``."""
    if observed is None or new is None or observed == new or observed not in shape:
        return shape
    at = shape.index(observed)
    return (*shape[:at], new, *shape[at + 1 :])
