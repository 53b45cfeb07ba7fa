"""Smaller batches from the same DataLoader: the first samples of each of its batches.

A DataLoader that batches for itself (``batch_size`` or a ``batch_sampler``) draws the
indices of each batch from its batch sampler, then fetches and collates them. Between the
two, the job can keep the first ``k`` indices of each batch: the sampler runs as before
(the same shuffle, ``drop_last`` applied at the full size, a batch sampler's grouping kept),
the dataset and ``collate_fn`` make the smaller batch as they make any, and a short last
batch stays as short as it was. The iterator's ``_sampler_iter`` is where torch's
single-process iterator takes each batch's indices.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch.utils.data import DataLoader

_SAMPLER_ITER = "_sampler_iter"


class BatchIndices:
    """Stands in for the iterator's batch-index iterator: remembers the last batch's
    indices, and once ``keep`` is set, hands on only the first ``keep`` of each."""

    def __init__(self, inner: Iterator[Any]) -> None:
        self.inner = inner
        self.last: Any = None
        self.keep: int | None = None

    def __iter__(self) -> BatchIndices:
        return self

    def __next__(self) -> Any:
        indices = next(self.inner)
        self.last = indices
        return indices if self.keep is None else indices[: self.keep]


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


def first_of_last(iterator: Any, indices: BatchIndices, keep: int) -> Any:
    """The last batch again, made of its first ``keep`` samples only: fetched and collated
    as the loader does."""
    return iterator._dataset_fetcher.fetch(indices.last[:keep])
