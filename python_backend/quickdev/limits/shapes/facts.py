"""A live value as the record keeps it: a tensor's dtype, shape, device and statistics; the
structure of tuples, lists and dicts holding tensors. No tensor is kept.

Statistics are one pass over the values, read back in one transfer (one synchronisation
on a GPU), and skipped where reading values would change what the script does or cannot
work: above ``STATS_MAX_ELEMENTS``, meta and fake tensors, while a tracer or a CUDA graph
capture records every operation, for tensor types whose values this cannot read.
"""

from __future__ import annotations

import contextlib
import math
from itertools import islice
from typing import Any

import torch

from quickdev.rundir.shapes import Other, Structure, TensorFacts, Value

# Reading every element is a pass over the data; above this many, only the shape is kept.
STATS_MAX_ELEMENTS = 10_000_000
# How far into nested structures, and how many items of each, the record goes.
MAX_DEPTH = 3
MAX_ITEMS = 8


def facts_of(tensor: torch.Tensor, stats: bool = True) -> TensorFacts:
    """``stats`` False: only the NaN/Inf counts (the Variables view's flags)."""
    facts = TensorFacts(
        dtype=str(tensor.dtype).removeprefix("torch."),
        shape=[int(d) for d in tensor.shape],
        device=str(tensor.device),
        requires_grad=bool(tensor.requires_grad),
        layout=str(tensor.layout).removeprefix("torch."),
    )
    if facts.layout == "strided" and _readable(tensor):
        # A tensor type whose values cannot be read this way keeps its shape only.
        with contextlib.suppress(Exception):
            _add_stats(facts, tensor, stats)
    return facts


def value_of(value: Any, depth: int = 0) -> Value | None:
    """The record of ``value``; None when it holds no tensor (nothing worth a hint)."""
    if isinstance(value, torch.Tensor):
        return facts_of(value)
    if depth >= MAX_DEPTH or not isinstance(value, (tuple, list, dict)):
        return None
    if isinstance(value, dict):
        pairs = list(value.items())
        keys: list[str] | None = [str(k) for k, _ in pairs[:MAX_ITEMS]]
        values = [v for _, v in pairs]
    else:
        keys, values = None, list(value)
    items = [value_of(v, depth + 1) for v in values[:MAX_ITEMS]]
    if all(item is None for item in items):
        return None
    kind = "dict" if keys is not None else "list" if isinstance(value, list) else "tuple"
    shown = [
        item if item is not None else Other(_type_name(v))
        for item, v in zip(items, values, strict=False)
    ]
    return Structure(kind, shown, keys, more=max(len(values) - MAX_ITEMS, 0))


def _type_name(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _readable(tensor: torch.Tensor) -> bool:
    if tensor.numel() == 0 or tensor.numel() > STATS_MAX_ELEMENTS:
        return False
    if tensor.device.type == "meta" or type(tensor).__name__ == "FakeTensor":
        return False
    if torch._C._get_tracing_state() is not None:  # torch.jit.trace records every operation
        return False
    return not (tensor.device.type == "cuda" and torch.cuda.is_current_stream_capturing())


def _add_stats(facts: TensorFacts, tensor: torch.Tensor, stats: bool) -> None:
    """Two passes in the usual case (min and max together, the sum); a sum that is not
    finite means NaN or Inf (or an overflow): then they are counted, and the statistics
    taken over the finite values, in a few passes more."""
    with torch.no_grad():
        data = tensor.detach()
        floating = data.is_floating_point()
        if data.is_complex() or not (floating or stats):
            return
        if data.dtype == torch.bool:
            data = data.to(torch.uint8)
        low, high = torch.aminmax(data)
        total = data.sum(dtype=torch.float32 if floating else torch.float64)
        numbers = torch.stack([low.double(), high.double(), total.double()]).tolist()
        count = data.numel()
        if floating and not math.isfinite(numbers[2]):
            nan = data.isnan()
            finite = data[data.isfinite()]
            facts.nan = int(nan.sum())
            facts.inf = count - int(finite.numel()) - facts.nan
            if not finite.numel():
                return
            low, high = torch.aminmax(finite)
            total, count = finite.sum(dtype=torch.float64), finite.numel()
            numbers = torch.stack([low.double(), high.double(), total.double()]).tolist()
        elif floating:
            facts.nan = facts.inf = 0
    if stats:
        facts.min, facts.max, facts.mean = numbers[0], numbers[1], numbers[2] / count


def signature(value: Any, depth: int = 0) -> Any:
    """What tells two values apart for the record (dtype, shape, device, grad; a
    structure's kind and items), cheaply: no value is read. None: no tensor in it."""
    if isinstance(value, torch.Tensor):
        return (value.dtype, tuple(value.shape), value.device, value.requires_grad)
    if depth >= MAX_DEPTH or not isinstance(value, (tuple, list, dict)):
        return None
    if isinstance(value, dict):
        pairs = list(islice(value.items(), MAX_ITEMS + 1))
        items = tuple((str(k), signature(v, depth + 1)) for k, v in pairs)
        found = any(s is not None for _, s in items)
    else:
        items = tuple(signature(v, depth + 1) for v in islice(value, MAX_ITEMS + 1))
        found = any(s is not None for s in items)
    return (type(value).__name__, len(value), items) if found else None
