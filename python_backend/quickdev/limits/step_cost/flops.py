"""Counting a step's work: its floating-point operations with ``torch.utils.flop_counter``'s
formulas, and the memory its operators write.

The same count as ``FlopCounterMode`` (torch's formulas, by operator), without what it adds
around it: global module hooks to attribute FLOPs to modules (the job finds the script's
top module with hooks of its own), and torch.compile's wrapping of dispatch modes, whose
first use imports ``torch._dynamo`` (seconds, in a script that has not imported it). Plus
the attention kernel torch runs on a CPU, which the registry lacks.

FLOPs alone miss what a large batch costs a CPU besides arithmetic: its activations. A
convolutional step at batch 1024 writes gigabytes (each BatchNorm, ReLU and pooling output,
and their gradients), and a new tensor above ``FRESH_BYTES`` comes from the operating system
as new pages, a page fault per 4 KiB at its first write. So the bytes of the tensors each
operator makes are counted too, split by size, and priced at this CPU's measured rates
(``speed.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import (
    flop_registry,
    sdpa_backward_flop_count,
    sdpa_flop_count,
)

aten = torch.ops.aten

# Above this size a new tensor's memory is new pages from the OS: glibc's malloc (torch's CPU
# allocator asks it) maps blocks above its mmap threshold anew each time, and that threshold
# grows with the blocks freed up to 32 MiB at most. Below it, freed memory is reused.
FRESH_BYTES = 32 * 1024 * 1024
FRESH, REUSED = "fresh", "reused"  # the keys of ``FlopCount.written``


def _cpu_attention(query: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> int:
    return int(sdpa_flop_count(query.shape, key.shape, value.shape))  # type: ignore[no-untyped-call]


def _cpu_attention_backward(
    grad_out: Any, query: Any, key: Any, value: Any, *args: Any, **kwargs: Any
) -> int:
    count = sdpa_backward_flop_count(  # type: ignore[no-untyped-call]
        grad_out.shape, query.shape, key.shape, value.shape
    )
    return int(count)


_FORMULAS: dict[Any, Any] = {}
for _name, _formula in (
    ("_scaled_dot_product_flash_attention_for_cpu", _cpu_attention),
    ("_scaled_dot_product_flash_attention_for_cpu_backward", _cpu_attention_backward),
):
    if hasattr(aten, _name):  # by name: not every torch of the declared range has both
        _FORMULAS[getattr(aten, _name)] = _formula


class FlopCount(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Counts the FLOPs of the torch operators run under it, by operator name, and the bytes
    of the tensors they make, by ``FRESH``/``REUSED`` memory."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.flops: Counter[str] = Counter()
        self.written: Counter[str] = Counter()
        self.ops = 0  # operators run, counted or not
        # Given an operator that raised, its arguments and the error: the error to raise.
        self.on_error: Callable[[Any, Any, Any, BaseException], BaseException] | None = None

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # see the module's docstring

    @property
    def total(self) -> int:
        return sum(self.flops.values())

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        self.ops += 1
        try:
            out = func(*args, **kwargs)
        except Exception as exc:
            if self.on_error is None:
                raise
            raised = self.on_error(func, args, kwargs, exc)
            if raised is exc:
                raise
            raise raised.with_traceback(None) from None
        packet = func.overloadpacket
        if packet in _FORMULAS:
            self.flops[packet.__name__] += _FORMULAS[packet](*args, **kwargs)
        elif packet in flop_registry:
            self.flops[packet.__name__] += int(flop_registry[packet](*args, **kwargs, out_val=out))
        if not func.is_view:  # a view writes nothing
            self._count_written(out, (args, kwargs))
        return out

    def _count_written(self, out: Any, inputs: Any) -> None:
        given: list[Any] | None = None  # the operator's inputs, listed once if needed
        for tensor in pytree.tree_leaves(out):
            if not isinstance(tensor, torch.Tensor):
                continue
            size = tensor.numel() * tensor.element_size()
            fresh = size > FRESH_BYTES
            if fresh:
                # An in-place operator writes into memory that is there already.
                given = pytree.tree_leaves(inputs) if given is None else given
                fresh = not any(tensor is one for one in given)
            self.written[FRESH if fresh else REUSED] += size
