"""A tensor as the NaN hunt sees it: finite or not, cheaply, and the statistics a person
reads when it is not. Also the values code hands torch that are not tensors (a ``-inf``
fill, a numpy array holding NaN)."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from quickdev.dtypes import HALF
from quickdev.rundir.nonfinite_origin import TensorStats

# Python numbers looked at in a list handed to torch (torch.tensor([[...]])).
_MAX_LISTED_NUMBERS = 100_000
_NESTING = 4


def floating(t: torch.Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


def all_finite(t: torch.Tensor) -> bool:
    """Whether every value is finite. A sum is NaN or infinite as soon as one value is, so
    one reduction answers without a mask as large as the tensor; a sum that is not finite
    (a value that is not, or finite values that overflow it) is settled by the extremes,
    which NaN and inf reach (a mask as large as the tensor costs fifty times more: a -inf
    attention mask meets this on every step)."""
    if t.numel() == 0 or t.layout != torch.strided or t.device.type == "meta":
        return True
    try:
        t = t.detach()
        total = t.sum(dtype=torch.float32) if t.dtype in HALF else t.sum()
        value = total.item()
        if isinstance(value, complex):
            return (math.isfinite(value.real) and math.isfinite(value.imag)) or bool(
                torch.isfinite(t).all()
            )
        if math.isfinite(value):
            return True
        low, high = torch.aminmax(t)
        return math.isfinite(low.item()) and math.isfinite(high.item())
    except Exception:  # a dtype without a sum (float8), a fake tensor: not checked
        return True


def first_nonfinite(tensors: list[torch.Tensor]) -> int | None:
    """The index of the first tensor holding a NaN/Inf. All of a model's parameters are
    summed first and read once per device (one GPU sync, not one per tensor)."""
    totals: dict[torch.device, list[torch.Tensor]] = {}
    try:
        for t in tensors:
            if t.numel() and t.layout == torch.strided and t.device.type != "meta":
                totals.setdefault(t.device, []).append(t.detach().sum(dtype=torch.float32))
        if all(math.isfinite(torch.stack(sums).sum().item()) for sums in totals.values()):
            return None
    except Exception:  # a dtype without a float32 sum: each tensor on its own
        pass
    return next((i for i, t in enumerate(tensors) if not all_finite(t)), None)


def tensors_in(value: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    """The tensors in an argument or a result: itself, or inside lists, tuples and dicts."""
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < _NESTING and isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors_in(item, depth + 1)
    elif depth < _NESTING and isinstance(value, Mapping):
        for item in value.values():
            yield from tensors_in(item, depth + 1)


def nonfinite_argument(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
    """How a non-tensor argument holds a NaN/Inf, in words (``-inf``, ``a numpy array
    holding NaN``); None when none does."""
    for value in (*args, *kwargs.values()):
        found = _nonfinite_value(value, [_MAX_LISTED_NUMBERS], 0)
        if found is not None:
            return found
    return None


def numbers_in(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
    """The very large or very small Python numbers a call was given (``value=-1.9e+38``): a
    learning rate or a scale that makes finite inputs overflow is one of them."""
    shown = [f"{v:g}" for v in args if _extreme(v)]
    shown += [f"{k}={v:g}" for k, v in kwargs.items() if _extreme(v)]
    return ", ".join(shown[:3]) or None


def _extreme(value: Any) -> bool:
    return isinstance(value, float) and (abs(value) >= 1e4 or 0 < abs(value) <= 1e-6)


def _nonfinite_value(value: Any, budget: list[int], depth: int) -> str | None:
    if isinstance(value, bool | int | torch.Tensor) or value is None:
        return None
    if isinstance(value, float | complex):
        budget[0] -= 1
        number = complex(value)
        if math.isfinite(number.real) and math.isfinite(number.imag):
            return None
        return _number_text(value)
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray | numpy.generic):
        if value.dtype.kind in "fc" and not bool(numpy.isfinite(value).all()):
            return "a numpy array holding " + _kinds_in(numpy.asarray(value))
        return None
    if isinstance(value, list | tuple) and depth < _NESTING:
        for item in value:
            if budget[0] <= 0:
                return None
            found = _nonfinite_value(item, budget, depth + 1)
            if found is not None:
                return found if depth else f"a {type(value).__name__} holding {found}"
    return None


def _number_text(value: float | complex) -> str:
    return "NaN" if value != value else ("inf" if complex(value).real > 0 else "-inf")


def _kinds_in(array: Any) -> str:
    import numpy

    kinds = [("NaN", numpy.isnan(array).any()), ("inf", numpy.isinf(array).any())]
    return " and ".join(name for name, present in kinds if present) or "NaN"


def kinds(t: TensorStats) -> str:
    """``NaN``, ``inf``, ``-inf`` or several, joined: what a tensor holds that is not finite."""
    names = [("NaN", t.nan), ("inf", t.posinf), ("-inf", t.neginf)]
    return ", ".join(name for name, count in names if count) or "NaN"


def kinds_of(origin: Any) -> str:
    """What an origin's output held that is not finite (``-inf``)."""
    output = origin.settle().output
    return kinds(output) if output is not None else "NaN/Inf"


def bare_stats(t: torch.Tensor) -> TensorStats:
    """A tensor's shape and dtype, without reading its values."""
    return TensorStats(shape=list(t.shape), dtype=str(t.dtype).removeprefix("torch."))


def stats(t: torch.Tensor) -> TensorStats:
    shown = bare_stats(t)
    if not floating(t) or t.layout != torch.strided or t.device.type == "meta" or not t.numel():
        return shown
    try:
        with torch.no_grad():
            data = t.detach()
            data = torch.view_as_real(data) if data.is_complex() else data
            finite = torch.isfinite(data)
            count = int(finite.sum())
            if count < data.numel():
                shown.nan = int(torch.isnan(data).sum())
                shown.posinf = int(torch.isposinf(data).sum())
                shown.neginf = data.numel() - count - shown.nan - shown.posinf
            shown.zeros = int((data == 0).sum())
            if count:
                low, high = torch.aminmax(_where(finite, data, count))
                total = torch.where(finite, data, 0).sum(dtype=torch.float64)
                shown.min = _rounded(low.item())
                shown.max = _rounded(high.item())
                shown.mean = _rounded(total.item() / count)
    except Exception:  # a backend that cannot be read: the shape and dtype still help
        pass
    return shown


def _where(finite: torch.Tensor, data: torch.Tensor, count: int) -> torch.Tensor:
    """The finite values (all of ``data`` when they all are; a copy of the others)."""
    return data if count == data.numel() else data[finite]


def _rounded(value: float) -> float:
    return float(f"{value:.6g}")


def describe(t: TensorStats) -> str:
    """``float32[8, 16] min -2.1 max 3.4 mean 0.02, 3 zeros, 2 NaN``."""
    shape = ", ".join(str(d) for d in t.shape)
    parts = [f"{t.dtype}[{shape}]"]
    if t.min is not None:
        parts.append(f"min {t.min:g} max {t.max:g} mean {t.mean:g}")
    counts = [(t.zeros, "zeros"), (t.nan, "NaN"), (t.posinf, "inf"), (t.neginf, "-inf")]
    extra = [f"{count} {name}" for count, name in counts if count]
    text = " ".join(parts)
    return f"{text}, {', '.join(extra)}" if extra else text
