"""Float16 as a GPU would compute it, where the script's CUDA autocast regions run on this
CPU in float32 (the device stand-in, ``limits/device/autocast.py``; under the hunt always).

A value over 65504 is finite in float32 and ``inf`` in float16: a script whose GPU run
overflows would pass here. So each call made in a CUDA autocast region, or given a tensor
that would be 16-bit on a GPU, is checked against the dtypes CUDA's autocast would give
it (``limits/device/cuda_policy.py`` asks torch's own kernels: ``bmm`` and ``linear`` in
float16, ``exp`` and ``softmax`` in float32, ``cat`` in the widest): an input CUDA would
cast to float16 that holds more than float16 can, or a result CUDA would compute in
float16 that does, becomes ``inf`` here as it would there, and the hunt follows it as any
other; its origin says it "would overflow float16 on a GPU". Where CUDA keeps float32 (an
``exp`` before a normalisation), nothing changes and nothing is blamed.

Forward only: a GPU's backward in float16 overflows too, and GradScaler is there for
that (it skips the step); gradients are not checked against float16 here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils import _pytree as pytree
from torch.utils.weak import WeakIdKeyDictionary

from quickdev.limits.device.cuda_policy import CudaPolicy
from quickdev.limits.device.engine import DeviceEngine
from quickdev.limits.nonfinite.sites import op_name


class GpuFloat16:
    def __init__(self, engine: DeviceEngine) -> None:
        self.engine = engine
        self.policy = CudaPolicy()
        # The dtype a tensor would hold on a GPU, where it is not the one it holds here.
        self.on_gpu: WeakIdKeyDictionary = WeakIdKeyDictionary()

    def after_op(
        self,
        func: Callable[..., Any],
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        out: Any,
    ) -> tuple[Any, str | None]:
        """``out`` as a GPU would have it (the call made again where an input overflows,
        overflowing values made ``inf`` in a result), and why it would overflow (None:
        it would not)."""
        autocast = self.engine.cuda_autocast()
        if autocast is None and not self.on_gpu:
            return out, None
        tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        gpu = [self._on_gpu(t) for t in tensors]
        if autocast is None and all(g == t.dtype for g, t in zip(gpu, tensors, strict=True)):
            return out, None
        policy = self.policy.of(func, args, kwargs, gpu, autocast)
        if policy is None:
            return out, None
        why = None
        cast_at = _narrowed_inputs(tensors, gpu, policy.casts)
        if cast_at and not _in_place(name):
            out, why = self._again_with_overflowing_inputs(func, args, kwargs, cast_at, out)
        results = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        for t, dtype in zip(results, policy.results, strict=False):
            if dtype is None or not t.is_floating_point():
                continue
            if dtype != t.dtype:
                self.on_gpu[t] = dtype
            elif t in self.on_gpu:
                del self.on_gpu[t]
            if _narrower(dtype, t.dtype) and why is None:
                largest = _overflowing(t, dtype)
                if largest is not None:
                    _as_on_gpu(t, dtype)
                    why = (
                        f"it would overflow {_name(dtype)} on a GPU: CUDA's autocast "
                        f"computes it in {_name(dtype)} (largest {_largest(dtype):g}), and "
                        f"its result reaches {largest:.3g} here"
                    )
        return out, why

    def _on_gpu(self, t: torch.Tensor) -> torch.dtype:
        dtype: torch.dtype = self.on_gpu.get(t, t.dtype)  # type: ignore[no-untyped-call]
        return dtype

    def _again_with_overflowing_inputs(
        self,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        cast_at: dict[int, torch.dtype],
        out: Any,
    ) -> tuple[Any, str | None]:
        """Inputs CUDA would cast to a narrower dtype than they fit in: the call made again
        with them as that cast leaves them (``inf``), as a GPU would compute it."""
        leaves, spec = pytree.tree_flatten((args, kwargs))
        overflowing: list[tuple[torch.dtype, float]] = []
        index = -1
        for i, leaf in enumerate(leaves):
            if not isinstance(leaf, torch.Tensor):
                continue
            index += 1
            dtype = cast_at.get(index)
            if dtype is None:
                continue
            largest = _overflowing(leaf, dtype)
            if largest is not None:
                with torch.no_grad():
                    rounded = leaf.detach().to(dtype).to(leaf.dtype)
                leaves[i] = rounded.requires_grad_(leaf.requires_grad)
                overflowing.append((dtype, largest))
        if not overflowing:
            return out, None
        again_args, again_kwargs = pytree.tree_unflatten(leaves, spec)
        out = func(*again_args, **again_kwargs)
        dtype, largest = overflowing[0]
        return out, (
            f"it would overflow {_name(dtype)} on a GPU: CUDA's autocast casts an input of "
            f"{op_name(func)} to {_name(dtype)} (largest {_largest(dtype):g}), and that "
            f"input holds {largest:.3g} here"
        )


def _narrowed_inputs(
    tensors: list[torch.Tensor], gpu: list[torch.dtype], casts: tuple[torch.dtype | None, ...]
) -> dict[int, torch.dtype]:
    """The inputs (by position) a GPU casts to a dtype narrower than it holds them in."""
    return {
        i: cast
        for i, (t, held, cast) in enumerate(zip(tensors, gpu, casts, strict=False))
        if cast is not None and t.is_floating_point() and _narrower(cast, held)
    }


def _overflowing(t: torch.Tensor, dtype: torch.dtype) -> float | None:
    """The largest finite magnitude in ``t`` that ``dtype`` cannot hold (it becomes inf
    there), or None."""
    if t.numel() == 0 or not t.is_floating_point():
        return None
    with torch.no_grad():
        data = t.detach()
        magnitude = data.abs().masked_fill(~torch.isfinite(data), 0)
        largest = float(magnitude.max())
        if largest <= _largest(dtype):
            return None
        # Rounded to nearest: just above the largest value still rounds down to it.
        if not bool(torch.isinf(data.to(dtype)[torch.isfinite(data)]).any()):
            return None
    return largest


def _as_on_gpu(t: torch.Tensor, dtype: torch.dtype) -> None:
    """Overflowing values of ``t`` become ``inf`` (with their sign), as a GPU's ``dtype``
    result holds them; through ``.data``, so autograd's saved values agree."""
    with torch.no_grad():
        data = t.data
        over = torch.isinf(data.to(dtype)) & torch.isfinite(data)
        data.masked_fill_(over & (data > 0), float("inf"))
        data.masked_fill_(over & (data < 0), float("-inf"))


def _narrower(dtype: torch.dtype, than: torch.dtype) -> bool:
    return (
        dtype.is_floating_point
        and than.is_floating_point
        and torch.finfo(dtype).max < torch.finfo(than).max
    )


def _largest(dtype: torch.dtype) -> float:
    return float(torch.finfo(dtype).max)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _in_place(name: str) -> bool:
    return name.endswith("_") and not name.endswith("__")
