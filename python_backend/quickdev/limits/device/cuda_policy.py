"""What CUDA's autocast does with a call, asked of torch's own CUDA autocast kernels.

Under ``torch.autocast("cuda", float16)`` each operation has a policy: some are computed in
the 16-bit dtype (matmul, bmm, linear, convolutions, attention), some in float32 (exp, log,
softmax, the norms, the losses, sums), some in the widest dtype of their inputs (cat,
stack, addcmul); the rest in their inputs' dtypes. The lists are C++ in torch
(``aten/src/ATen/autocast_mode.cpp``) and change between releases, and a CPU build of
torch registers them too (the ``AutocastCUDA`` dispatch key). So instead of a copy of the
lists, the call is made once per signature on stand-ins for CUDA tensors (``_Probe``: a
CUDA device, meta storage: no memory, no GPU) with CUDA autocast on: the dtypes the kernels
cast each input to, and the dtypes of the results, are the answer of the torch in use.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree

log = logging.getLogger(__name__)

_CUDA = torch.device("cuda", 0)
_META = torch.device("meta")
_TO_COPY = torch.ops.aten._to_copy.default
# Signatures remembered at most (a script has tens to hundreds).
MAX_SIGNATURES = 10_000


@dataclass(frozen=True)
class Policy:
    """For one signature: what CUDA casts each tensor argument to (in the order
    ``pytree`` flattens ``(args, kwargs)``; None: left as it is), and each tensor result's
    dtype on a GPU (None where the call could not be followed that far)."""

    casts: tuple[torch.dtype | None, ...]
    results: tuple[torch.dtype | None, ...]


class CudaPolicy:
    """Answers, per signature, for the CUDA autocast dtype ``dtype``."""

    def __init__(self) -> None:
        self._known: dict[Any, Policy | None] = {}

    def of(
        self,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        dtypes: list[torch.dtype],
        autocast: torch.dtype | None,
    ) -> Policy | None:
        """The policy of ``func(*args, **kwargs)`` whose tensors would hold ``dtypes`` on a
        GPU (one per tensor leaf), in a CUDA autocast region of ``autocast`` (None: outside
        one); None when torch's kernels could not be asked."""
        leaves, spec = pytree.tree_flatten((args, kwargs))
        key = (func, autocast, spec, tuple(_key_of(leaf) for leaf in leaves), tuple(dtypes))
        try:
            return self._known[key]
        except KeyError:
            pass
        except TypeError:  # an argument that cannot be hashed: asked each time
            return _ask(func, leaves, spec, dtypes, autocast)
        policy = _ask(func, leaves, spec, dtypes, autocast)
        if len(self._known) < MAX_SIGNATURES:
            self._known[key] = policy
        return policy


def _key_of(leaf: Any) -> Any:
    """What of an argument can change a policy: a tensor's rank (its dtype is given apart),
    a dtype, a flag, a name; other values only by their type (a scale, a shape)."""
    if isinstance(leaf, torch.Tensor):
        return ("tensor", leaf.dim())
    if leaf is None or isinstance(leaf, bool | str | torch.dtype | torch.device):
        return leaf
    return type(leaf)


def _ask(
    func: Callable[..., Any],
    leaves: list[Any],
    spec: Any,
    dtypes: list[torch.dtype],
    autocast: torch.dtype | None,
) -> Policy | None:
    metas: list[Any] = []
    given = iter(dtypes)
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            dtype = next(given)
            metas.append(torch.empty_strided(leaf.shape, leaf.stride(), dtype=dtype, device=_META))
        else:
            metas.append(_on_meta(leaf))
    probes = [_Probe(m) if isinstance(m, torch.Tensor) else m for m in metas]
    inputs = [p for p in probes if isinstance(p, _Probe)]
    casts: dict[int, torch.dtype] = {}
    _Probe.recording = (inputs, casts)
    try:
        with _cuda_autocast(autocast), torch.no_grad():
            out = _call(func, pytree.tree_unflatten(probes, spec))
    finally:
        _Probe.recording = None
    if out is _FAILED and not casts:
        # Stopped before any kernel ran: torch's Python binding of the call needs a CUDA
        # device of its own (indexing, .contiguous()). Autocast casts nothing there (it
        # acts in the kernels), so the dtypes follow from the inputs' alone.
        with torch.no_grad():
            out = _call(func, pytree.tree_unflatten(metas, spec))
    if out is _FAILED:
        if not casts:
            return None
        # A call meta tensors cannot finish (a value read back, a kernel without a meta
        # form): what autocast cast its inputs to before it stopped still answers.
        lowered = set(casts.values())
        results: tuple[torch.dtype | None, ...] = (lowered.pop(),) if len(lowered) == 1 else (None,)
    else:
        results = tuple(t.dtype for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor))
    return Policy(tuple(casts.get(i) for i in range(len(inputs))), results)


_FAILED = object()


def _call(func: Callable[..., Any], call: tuple[tuple[Any, ...], dict[str, Any]]) -> Any:
    args, kwargs = call
    try:
        return func(*args, **kwargs)
    except Exception:
        log.debug("CUDA's autocast policy of %s: not followed to its end", func, exc_info=True)
        return _FAILED


class _Probe(torch.Tensor):
    """A tensor on a CUDA device (so the AutocastCUDA kernels see it) whose storage is a
    meta tensor: every operation on it is shape and dtype only."""

    meta: torch.Tensor
    # While a policy is asked: the probes standing in for the call's tensors, and the
    # dtypes autocast cast each to (by position), recorded as the kernels cast them. A
    # class attribute, not a dispatch mode: a mode's first use imports torch._dynamo
    # (seconds), and the hunt asks from the user's thread only.
    recording: tuple[list[_Probe], dict[int, torch.dtype]] | None = None
    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    @staticmethod
    def __new__(cls, meta: torch.Tensor) -> _Probe:
        probe: _Probe = torch.Tensor._make_wrapper_subclass(
            cls,
            meta.shape,
            strides=meta.stride(),
            storage_offset=meta.storage_offset(),
            dtype=meta.dtype,
            device=_CUDA,
            requires_grad=False,
        )
        probe.meta = meta
        return probe

    @classmethod
    def __torch_dispatch__(  # type: ignore[override]
        cls, func: Any, types: Any, args: Any = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        recording = _Probe.recording
        if recording is not None and func is _TO_COPY and kwargs.get("dtype") is not None:
            inputs, casts = recording
            for i, probe in enumerate(inputs):
                if args and args[0] is probe and i not in casts:
                    casts[i] = kwargs["dtype"]
        return _run_on_meta(func, args, kwargs)


def _run_on_meta(func: Any, args: Any, kwargs: Any) -> Any:
    args, kwargs = pytree.tree_map(_on_meta, (args, kwargs))
    out = func(*args, **kwargs)
    return pytree.tree_map_only(
        torch.Tensor, lambda t: _Probe(t) if t.device.type == "meta" else t, out
    )


def _on_meta(value: Any) -> Any:
    if isinstance(value, _Probe):
        return value.meta
    if isinstance(value, torch.Tensor):
        return value.to(_META) if value.device.type != "meta" else value
    if isinstance(value, torch.device) and value.type == "cuda":
        return _META
    if isinstance(value, str) and value.startswith("cuda"):
        return "meta"
    return value


class _cuda_autocast:
    """CUDA autocast on (or off) for this thread while a policy is asked, whatever the
    script's state; put back after. Set at the C level: ``torch.autocast("cuda")`` refuses
    where CUDA is not available, and the job's stand-in replaces it."""

    def __init__(self, dtype: torch.dtype | None) -> None:
        self.dtype = dtype

    def __enter__(self) -> None:
        self.was = (torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda"))
        torch.set_autocast_enabled("cuda", self.dtype is not None)
        if self.dtype is not None:
            torch.set_autocast_dtype("cuda", self.dtype)

    def __exit__(self, *exc: object) -> None:
        enabled, dtype = self.was
        torch.set_autocast_enabled("cuda", enabled)
        torch.set_autocast_dtype("cuda", dtype)
