"""Where the non-finite values held in memory came from: an origin per storage.

Keyed by storage rather than by tensor, so a view (a row taken with ``x[i]``, a reshape)
sees the origin of the values it shows, and an in-place write is a write to its base.
An entry goes when its storage is written whole with finite values; a storage that is
freed and reused by an operation the hunt sees is rewritten there. The map is bounded.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from quickdev.limits.nonfinite.found import FrameChain
from quickdev.limits.nonfinite.values import bare_stats, stats
from quickdev.rundir.nonfinite_origin import NonfiniteSample, TensorStats

# Storages remembered at most; the oldest go first (a non-finite value from long ago that
# never reached a loss is not worth the memory).
MAX_ENTRIES = 100_000


@dataclass(eq=False)
class Origin:
    """The operation a non-finite value came from, as seen when it ran."""

    op: str
    cause: str  # produced | argument | input (see rundir.result.NonfiniteOrigin)
    phase: str
    step: int
    file: str | None
    line: int | None
    function: str | None
    module: str | None
    detail: str | None = None  # the argument ("-inf"), the backward function's name
    inputs: list[TensorStats] = field(default_factory=list)
    output: TensorStats | None = None
    # The user's frames when it ran, for the debugger; let go when the step ends (hunt.py).
    frames: FrameChain | None = None
    sample: NonfiniteSample | None = None
    # Produced from an input non-finite by design (a -inf mask): that input's origin site.
    designed: tuple[str, str | None, int | None] | None = None
    designed_kinds: str = ""
    # A NaN made where a row was masked whole: that row, in words (masking.py).
    masked: str | None = None
    # An inf a GPU would make and this CPU did not: why, in words (float16.py).
    gpu: str | None = None
    # A backward origin: the forward values its node kept (backward.kept_for_backward).
    forward: dict[str, TensorStats] = field(default_factory=dict)
    # What the call was given and made, while its statistics are not needed yet: reading a
    # large tensor's statistics costs milliseconds, and most origins are a mask's -inf,
    # made finite again in the same step and never reported (``settle``, ``let_go``).
    pending: tuple[list[torch.Tensor], torch.Tensor] | None = field(default=None, repr=False)
    # After ``let_go``: the output, weakly (a mask made once lives on, and is read if asked).
    _made: weakref.ref[torch.Tensor] | None = field(default=None, repr=False)

    @property
    def site(self) -> tuple[str, str | None, int | None]:
        """The operation and the user's line: the same for a mask made anew on every step."""
        return (self.op, self.file, self.line)

    def settle(self) -> Origin:
        """``inputs`` and ``output`` read from the tensors, if they are still pending (or,
        after ``let_go``, the output if it still lives)."""
        if self.pending is not None:
            inputs, output = self.pending
            self.pending = None
            self.inputs = [stats(x) for x in inputs]
            self.output = stats(output)
        elif self._made is not None:
            living = self._made()
            self._made = None
            if living is not None:
                self.output = stats(living)
        return self

    def let_go(self) -> None:
        """The step ended and its tensors go: their shapes and dtypes are kept, and the
        output weakly."""
        if self.pending is not None:
            inputs, output = self.pending
            self.pending = None
            self.inputs = [bare_stats(x) for x in inputs]
            self.output = bare_stats(output)
            self._made = weakref.ref(output)


def storage_key(t: torch.Tensor) -> int | None:
    try:
        pointer = t.untyped_storage().data_ptr()
    except Exception:  # no storage: sparse, nested, a subclass without data
        return None
    return pointer or None


class Provenance:
    """Origins by storage. Each entry keeps a weak reference to its storage: an entry whose
    storage was freed says nothing of a new tensor the allocator put at its address, and is
    dropped (``prune``, at each step's end: a mask's -inf made every step is freed with its
    step, and later calls need not look their inputs up)."""

    def __init__(self) -> None:
        self._by_storage: dict[int, tuple[StorageWeakRef, Origin]] = {}

    def __bool__(self) -> bool:
        return bool(self._by_storage)

    def of(self, t: torch.Tensor) -> Origin | None:
        if not self._by_storage:
            return None
        key = storage_key(t)
        entry = None if key is None else self._by_storage.get(key)
        if entry is None:
            return None
        if _expired(entry[0]):
            del self._by_storage[key]  # type: ignore[arg-type]
            return None
        return entry[1]

    def mark(self, t: torch.Tensor, origin: Origin) -> None:
        key = storage_key(t)
        if key is None:
            return
        self._by_storage.pop(key, None)
        if len(self._by_storage) >= MAX_ENTRIES:
            del self._by_storage[next(iter(self._by_storage))]
        self._by_storage[key] = (_weak(t), origin)

    def prune(self) -> None:
        """Entries whose storage was freed go."""
        for key in [k for k, (ref, _) in self._by_storage.items() if _expired(ref)]:
            del self._by_storage[key]

    def forget(self, t: torch.Tensor) -> None:
        """``t`` is finite now: its storage is, when ``t`` covers all of it."""
        if not self._by_storage:
            return
        key = storage_key(t)
        if key is not None and key in self._by_storage and _covers_storage(t):
            del self._by_storage[key]


def _weak(t: torch.Tensor) -> StorageWeakRef:
    ref: StorageWeakRef = StorageWeakRef(t.untyped_storage())  # type: ignore[no-untyped-call]
    return ref


def _expired(ref: StorageWeakRef) -> bool:
    return bool(ref.expired())  # type: ignore[no-untyped-call]


def _covers_storage(t: torch.Tensor) -> bool:
    try:
        return bool(
            t.is_contiguous() and t.numel() * t.element_size() == t.untyped_storage().nbytes()
        )
    except Exception:
        return False
