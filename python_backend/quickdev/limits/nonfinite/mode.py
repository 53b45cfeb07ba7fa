"""The hunt's ``TorchFunctionMode``: after each torch call of the user's process, the
tensors it wrote go to the hunt (``forward.after_op``).

A function mode sees calls as the user's code makes them (``torch.log``, ``x / std``,
``F.linear`` from ``nn.Linear``), one level deep: what torch does inside a call runs with the
mode off, so the cost is one Python call per user-level operation and names are the ones
the user wrote. Backward runs with it off too; backward functions are checked by hooks.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch.overrides import TorchFunctionMode

from quickdev.limits.nonfinite.provenance import storage_key
from quickdev.limits.nonfinite.sites import op_name, user_frame
from quickdev.limits.nonfinite.values import tensors_in

if TYPE_CHECKING:
    from quickdev.limits.nonfinite.state import HuntState

# What the mode hands over: (func, name, args, kwargs, out); it returns the call's result
# (``out``, or ``out`` as a GPU would compute it: float16.py).
AfterOp = Callable[[Callable[..., Any], str, tuple[Any, ...], dict[str, Any], Any], Any]

# Calls that write no values: attribute access, metadata, printing, uninitialized memory
# (``torch.empty`` holds whatever was there, not values the code computed).
SKIPPED = frozenset(
    {
        "__get__",
        "__set__",
        "__repr__",
        "__format__",
        "__str__",
        "item",
        "tolist",
        "numpy",
        "backward",
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "requires_grad_",
        "retain_grad",
        "detach_",
        "share_memory_",
        "resize_",
        "resize_as_",
        "record_stream",
    }
)
IN_PLACE_OPERATORS = frozenset(
    {
        "__setitem__",
        "__iadd__",
        "__isub__",
        "__imul__",
        "__itruediv__",
        "__ifloordiv__",
        "__imod__",
        "__ipow__",
        "__imatmul__",
    }
)


# The optimizers' own files: their arithmetic is not followed call by call (two thirds of a
# small model's calls are an Adam update's); the parameters they update are checked after
# each step (sinks.check_parameters), which names the update when one is not finite.
OPTIMIZERS = os.path.dirname(torch.optim.__file__) + os.sep


class HuntMode(TorchFunctionMode):
    def __init__(self, state: HuntState, after_op: AfterOp) -> None:
        super().__init__()
        self.state = state
        self.after_op = after_op

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        state = self.state
        if state.in_optimizer and sys._getframe(1).f_code.co_filename.startswith(OPTIMIZERS):
            return out
        if state.following:
            name = getattr(func, "__name__", "")
            if name not in SKIPPED:
                try:
                    out = self.after_op(func, name, args, kwargs, out)
                except Exception:  # never fail the user's call; NonFiniteFound passes
                    frame = user_frame(sys._getframe(1))
                    self.state.failures.failed(
                        op_name(func),
                        frame.f_code.co_filename if frame else None,
                        frame.f_lineno if frame else None,
                    )
        return out


def in_place(name: str, kwargs: dict[str, Any]) -> bool:
    return (
        kwargs.get("out") is not None
        or (name.endswith("_") and not name.endswith("__"))
        or name in IN_PLACE_OPERATORS
    )


def written(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    """The tensors an in-place call wrote: ``out=``, the first argument (a tensor, or a list
    of them for ``torch._foreach_*_``)."""
    if kwargs.get("out") is not None:
        return list(tensors_in(kwargs["out"]))
    return list(tensors_in(args[0])) if args else []


def results(out: Any, args: tuple[Any, ...]) -> list[torch.Tensor]:
    """The new tensors a call returned: an argument handed back, or a view of one (``x[i]``,
    ``x.T``), holds no new values. (A view of the call's own buffer does: ``F.linear`` on a
    3-d input returns one.)"""
    if isinstance(out, torch.Tensor):
        found = [out]
    elif isinstance(out, (tuple, list)):
        found = [o for o in out if isinstance(o, torch.Tensor)]
    else:
        return []
    return [t for t in found if not _aliases_argument(t, args)]


def _aliases_argument(t: torch.Tensor, args: tuple[Any, ...]) -> bool:
    if any(t is a for a in args):
        return True
    if not t._is_view():
        return False
    key = storage_key(t)
    return key is not None and any(storage_key(a) == key for a in tensors_in(args))
