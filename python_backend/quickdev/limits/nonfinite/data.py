"""Batches under the hunt: each one a DataLoader yields is checked, and a non-finite value in
it is tied to its sample (the row of the batch, the index the loader asked the dataset for)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

import torch

from quickdev.limits.nonfinite.provenance import Origin
from quickdev.limits.nonfinite.report import batch_row
from quickdev.limits.nonfinite.sites import frame_chain, user_frame
from quickdev.limits.nonfinite.state import HuntState
from quickdev.limits.nonfinite.values import all_finite, floating, stats, tensors_in
from quickdev.rundir.nonfinite_origin import NonfiniteSample
from quickdev.rundir.result import LoaderStats


def watch_loader(state: HuntState, iterator: Iterator[Any]) -> None:
    """Remember the dataset indices of each batch, from the loader's own iterator."""
    next_index = getattr(iterator, "_next_index", None)
    if next_index is None:
        return

    def remembered() -> Any:
        state.indices = next_index()
        return state.indices

    with suppress(AttributeError):
        iterator._next_index = remembered  # type: ignore[attr-defined]


def check_batch(state: HuntState, loader: LoaderStats, batch: Any) -> None:
    try:
        with state.checking():
            for t in tensors_in(batch):
                if floating(t) and not all_finite(t):
                    loader.nonfinite = True
                    _tie_to_sample(state, loader, t)
    except Exception:
        file, _, line = loader.origin.rpartition(":")
        state.failures.failed(
            "a batch of the DataLoader", file or None, int(line) if line.isdigit() else None
        )


def _tie_to_sample(state: HuntState, loader: LoaderStats, t: torch.Tensor) -> None:
    origin = state.provenance.of(t)
    if origin is None:  # made where the hunt did not see (a worker, numpy): the batch itself
        origin = _batch_origin(t, state.step("data"))
        state.keep(origin)
    if origin.sample is None:
        row = batch_row(t)
        indices = state.indices
        index = None
        if isinstance(indices, list | tuple) and row < len(indices):
            index = indices[row] if isinstance(indices[row], int) else None
        elif isinstance(indices, int):
            index = indices
        origin.sample = NonfiniteSample(loader=loader.origin, row=row, dataset_index=index)
    state.provenance.mark(t, origin)


def _batch_origin(t: torch.Tensor, step: int) -> Origin:
    frame = user_frame(sys._getframe(3))
    return Origin(
        op="a DataLoader batch",
        cause="input",
        phase="data",
        step=step,
        file=frame.f_code.co_filename if frame else None,
        line=frame.f_lineno if frame else None,
        function=frame.f_code.co_name if frame else None,
        module=None,
        output=stats(t),
        frames=frame_chain(frame),
    )
