"""What fake tensors cannot do, for the step-cost probe (``probe.py``): values made up where
the script reads one, deep copies, and telling an error of the script's from one of fake
tensors' own (an operator that needs values, a fake kernel stricter than the real one)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from quickdev.limits.user_code import caller_origin


@contextlib.contextmanager
def modes_off() -> Iterator[None]:
    from torch.utils._python_dispatch import _disable_current_modes

    with torch._C.DisableTorchFunction(), _disable_current_modes():
        yield


# Tensors a failing operator is tried again on for real, to give its own message: above
# this size the fake one's message is kept (the real operator could allocate this much).
_RETRY_BYTES = 1 << 30


def fake_limitation(exc: BaseException) -> str | None:
    """Why ``exc`` is fake tensors' (or this probe's) doing rather than the script's."""
    from torch._subclasses import fake_tensor

    limits = (
        fake_tensor.DataDependentOutputException,
        fake_tensor.DynamicOutputShapeException,
        fake_tensor.UnsupportedFakeTensorException,
        fake_tensor.UnsupportedOperatorException,
    )
    if isinstance(exc, limits):
        op = str(exc).split()[0] if str(exc) else type(exc).__name__
        return f"fake tensors cannot compute {op}, whose result depends on values"
    text = str(exc)
    if "tensor subclass" in text or "FakeTensor" in text or "'Meta' backend" in text:
        return f"fake tensors cannot run this: {type(exc).__name__}: {text.splitlines()[0]}"
    if isinstance(exc, RealKernelAccepts):
        return str(exc)
    return None


class RealKernelAccepts(RuntimeError):
    """A fake kernel refused what the real one accepts."""


class FakeValues(TorchFunctionMode):
    """What fake tensors cannot do, done for them: a read of a value is answered with zero
    (False, a list or an array of zeros) and where the first one was made up is kept; a
    deep copy (``copy.deepcopy``, as a metric's state or an EMA model makes) is a new fake
    tensor of the same kind."""

    READS = frozenset(
        {
            "item",
            "__bool__",
            "__int__",
            "__float__",
            "__index__",
            "__format__",
            "tolist",
            "numpy",
            "__array__",
        }
    )

    def __init__(self) -> None:
        super().__init__()
        self.first: str | None = None
        self.backwards = 0  # backward calls: the pass trained

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        tensor = args[0] if args else None
        if name == "backward":
            self.backwards += 1
        if name == "__deepcopy__" and tensor is not None and _is_fake(tensor):
            copied = torch.empty_like(tensor).requires_grad_(tensor.requires_grad)
            memo = args[1] if len(args) > 1 else kwargs.get("memo")
            if isinstance(memo, dict):
                memo[id(tensor)] = copied
            return copied
        if name not in self.READS or tensor is None or not _is_fake(tensor):
            return func(*args, **kwargs)
        if self.first is None:
            self.first = f"{_shown(name)} at {_short(caller_origin(2))}"
        return _made_up(name, tensor, args[1:])


def _made_up(name: str, tensor: torch.Tensor, rest: tuple[Any, ...]) -> Any:
    zero = _zero(tensor.dtype)
    if name == "__format__":
        return format(zero, *rest)
    if name == "tolist":
        return _zeros_list(tuple(tensor.shape), zero)
    if name in ("numpy", "__array__"):
        import numpy

        return numpy.zeros(tuple(tensor.shape), dtype=_numpy_dtype(tensor.dtype))
    if name == "__float__":
        return float(zero)
    if name in ("__int__", "__index__"):
        return int(zero)
    return False if name == "__bool__" else zero


def _is_fake(value: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(value, FakeTensor)


def _zero(dtype: torch.dtype) -> Any:
    if dtype == torch.bool:
        return False
    if dtype.is_complex:
        return 0j
    return 0.0 if dtype.is_floating_point else 0


def _zeros_list(shape: tuple[int, ...], zero: Any) -> Any:
    if not shape:
        return zero
    return [_zeros_list(shape[1:], zero) for _ in range(shape[0])]


def _numpy_dtype(dtype: torch.dtype) -> Any:
    import numpy

    return numpy.dtype(str(dtype).removeprefix("torch.").replace("bfloat16", "float32"))


def _shown(name: str) -> str:
    return {
        "__bool__": "bool(tensor)",
        "__int__": "int(tensor)",
        "__float__": "float(tensor)",
        "__index__": "a tensor used as an index",
        "__format__": "a tensor formatted",
        "__array__": "numpy.asarray(tensor)",
    }.get(name, f"tensor.{name}()")


def _short(origin: str) -> str:
    file, _, line = origin.rpartition(":")
    return f"{os.path.basename(file)}:{line}" if file else origin


def real_retry(func: Any, args: Any, kwargs: Any, error: BaseException) -> BaseException:
    """The error the real operator gives where its fake kernel raised ``error``: its own
    message (a fake kernel words some checks its own way). Where the real one accepts the
    same shapes, the fake refusal was not the script's: ``RealKernelAccepts``."""
    from torch._subclasses.fake_tensor import FakeTensor

    fakes = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, FakeTensor)]
    if not fakes or sum(t.numel() * t.element_size() for t in fakes) > _RETRY_BYTES:
        return error

    def real(value: Any) -> Any:
        if isinstance(value, FakeTensor):
            # Uninitialised: a shape check needs no values, and the pages are never touched.
            return torch.empty(value.shape, dtype=value.dtype, device="cpu")
        return value

    with modes_off():
        real_args, real_kwargs = pytree.tree_map(real, (args, kwargs))
        try:
            func(*real_args, **real_kwargs)
        except Exception as exc:
            return exc
    return RealKernelAccepts(
        f"fake tensors refused {getattr(func, '__name__', func)} where the real operator "
        f"accepts it ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"
    )
