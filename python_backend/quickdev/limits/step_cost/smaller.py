"""Smaller batches from the same DataLoader: the first samples of each of its batches.

A DataLoader that batches for itself (``batch_size`` or a ``batch_sampler``) draws the
indices of each batch from its batch sampler, then fetches and collates them. Between the
two, the job can keep the first ``k`` indices of each batch: the sampler runs as before
(the same shuffle, ``drop_last`` applied at the full size, a batch sampler's grouping kept),
the dataset and ``collate_fn`` make the smaller batch as they make any, and a short last
batch stays as short as it was. The iterator's ``_sampler_iter`` is where torch's
single-process iterator takes each batch's indices.

Before a loader's first batch is decided, the loader fetches only its first samples (a
peek): a full batch of images can take longer to load than its step on fake tensors. Where
two peeks collate to the same shapes but their batch size, the full batch's shapes are
known without loading it (``FullSize``); where they differ (sequences padded to the longest
of the batch), the full batch is fetched.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree
from torch.utils.data import DataLoader

from quickdev.rundir.result import LoaderStats

_SAMPLER_ITER = "_sampler_iter"
# Samples a first look at a batch fetches.
PEEK = 2


class BatchIndices:
    """Stands in for the iterator's batch-index iterator: remembers the last batch's
    indices; hands on only the first ``peek`` of the next batch once, and, once ``keep`` is
    set, only the first ``keep`` of each."""

    def __init__(self, inner: Iterator[Any]) -> None:
        self.inner = inner
        self.last: Any = None
        self.keep: int | None = None
        self.peek: int | None = None
        self.peeked = False  # the last batch handed on was a first look
        self.random: RandomState | None = None  # the random generators' states before it

    def __iter__(self) -> BatchIndices:
        return self

    def __next__(self) -> Any:
        indices = next(self.inner)
        self.last = indices
        peek, self.peek = self.peek, None
        self.peeked = peek is not None
        if self.peeked:
            self.random = RandomState.now()
        keep = peek if peek is not None else self.keep
        return indices if keep is None else indices[:keep]


def why_not(loader: DataLoader[Any], iterator: Any) -> str | None:
    """Why this loader's batches cannot be made smaller, in words; None when they can."""
    if getattr(loader, "batch_sampler", None) is None:
        return "its dataset makes the batches (batch_size=None)"
    if getattr(loader, "_dataset_kind", None) != 0:  # torch's _DatasetKind.Map
        return "it reads an IterableDataset, whose batches it cannot take apart"
    if not hasattr(iterator, _SAMPLER_ITER) or not hasattr(iterator, "_dataset_fetcher"):
        return "its iterator is not torch's own"
    return None


def watch(iterator: Any) -> BatchIndices | None:
    """Put a ``BatchIndices`` between ``iterator`` and its batch sampler (before its first
    batch); None where the iterator has none."""
    inner = getattr(iterator, _SAMPLER_ITER, None)
    if inner is None:
        return None
    if isinstance(inner, BatchIndices):
        return inner
    indices = BatchIndices(inner)
    setattr(iterator, _SAMPLER_ITER, indices)
    return indices


def fetch(iterator: Any, indices: Any, stats: LoaderStats) -> Any:
    """The samples at ``indices``, fetched and collated as the loader does; the time it
    takes is the loader's data wait."""
    started = time.perf_counter()
    batch = iterator._dataset_fetcher.fetch(list(indices))
    stats.data_wait_s += time.perf_counter() - started
    return batch


@dataclass(frozen=True)
class FullSize:
    """A full batch known by its shapes: the peek's structure, each tensor ``size`` long."""

    size: int
    structure: Any  # the peek's treespec
    specs: tuple[tuple[tuple[int, ...], torch.dtype, torch.device], ...]

    def make(self) -> Any:
        """The batch of empty tensors: fake ones under ``FakeTensorMode`` (the probe)."""
        tensors = [
            torch.empty(shape, dtype=dtype, device=device) for shape, dtype, device in self.specs
        ]
        return pytree.tree_unflatten(tensors, self.structure)

    def stand_in(self) -> Any:
        """The batch's shapes, dtypes and devices without its memory (for its signature)."""
        tensors = [
            torch.empty((1,) * len(shape), dtype=dtype, device=device).expand(shape)
            for shape, dtype, device in self.specs
        ]
        return pytree.tree_unflatten(tensors, self.structure)


def full_size(first: Any, second: Any, peek: int, size: int) -> FullSize | None:
    """The full batch's shapes from two peeks of ``peek`` samples: the same structure, every
    leaf a tensor whose first dimension is the batch's, the same other dimensions and dtypes
    in both. None where a peek holds anything else (a list of strings is as long as its
    batch) or the shapes differ (padding to the longest sample)."""
    leaves, structure = pytree.tree_flatten(first)
    others, other_structure = pytree.tree_flatten(second)
    if structure != other_structure or not leaves:
        return None
    specs = []
    for one, other in zip(leaves, others, strict=True):
        if not (isinstance(one, torch.Tensor) and isinstance(other, torch.Tensor)):
            return None
        if one.dim() == 0 or one.shape[0] != peek or one.shape != other.shape:
            return None
        if one.dtype != other.dtype or one.device != other.device:
            return None
        specs.append(((size, *one.shape[1:]), one.dtype, one.device))
    return FullSize(size, structure, tuple(specs))


class FirstBatch:
    """A loader's first batch while it is decided: a first look at its first samples (when
    the loader took one), and the whole batch, fetched only when needed."""

    def __init__(self, iterator: Any, stats: LoaderStats, batch: Any) -> None:
        self.iterator = iterator
        self.stats = stats
        indices = getattr(iterator, "_sampler_iter", None)
        self.indices = indices if isinstance(indices, BatchIndices) else None
        self.peeked = self.indices is not None and self.indices.peeked
        self.size = len(self.indices.last) if self.indices and self.peeked else _batch_size(batch)
        self.peek = batch if self.peeked else None
        self._whole = None if self.peeked else batch

    def whole(self) -> Any:
        if self._whole is None:
            self._whole = self.first(self.size or 0)
        return self._whole

    def first(self, size: int) -> Any:
        """The batch's first ``size`` samples, drawing the random numbers the loader would
        have (a dataset's random crops): the first looks' draws are taken back."""
        assert self.indices is not None
        if self.indices.random is not None:
            self.indices.random.restore()
        return fetch(self.iterator, self.indices.last[:size], self.stats)

    def shapes(self) -> FullSize | None:
        """The whole batch's shapes from two first looks, where they tell them."""
        if not self.peeked or self.size is None or self.size < 2 * PEEK:
            return None
        assert self.indices is not None
        peek = PEEK
        again = fetch(self.iterator, self.indices.last[peek : 2 * peek], self.stats)
        return full_size(self.peek, again, peek, self.size)


@dataclass(frozen=True)
class RandomState:
    """The states of torch's, Python's and NumPy's global random generators."""

    torch_state: torch.Tensor
    python_state: Any
    numpy_state: Any

    @classmethod
    def now(cls) -> RandomState:
        numpy = sys.modules.get("numpy")
        return cls(
            torch.get_rng_state(),
            random.getstate(),
            numpy.random.get_state() if numpy is not None else None,
        )

    def restore(self) -> None:
        torch.set_rng_state(self.torch_state)
        random.setstate(self.python_state)
        numpy = sys.modules.get("numpy")
        if numpy is not None and self.numpy_state is not None:
            numpy.random.set_state(self.numpy_state)


def _batch_size(batch: Any) -> int | None:
    for leaf in pytree.tree_leaves(batch):
        if isinstance(leaf, torch.Tensor) and leaf.dim() > 0:
            return int(leaf.shape[0])
    return None
