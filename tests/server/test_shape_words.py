"""How a recorded name reads in the editor (``server/shape_words``), from values a job would
record (``limits/shapes/facts.value_of`` on real tensors)."""

from __future__ import annotations

from pathlib import Path

import torch
from quickdev.limits.shapes.facts import value_of
from quickdev.rundir.shapes import NameRecord, Seen, Value
from quickdev.server.shape_records import RunOfRecord
from quickdev.server.shape_words import LABEL_SHAPE_CHARS, hint_label, hover_markdown

RUN = RunOfRecord("20261124-184558-train-b2e1", "2026-11-24T18:45:58+00:00", Path("/runs/r"))


def recorded(*values: object, more: int = 0) -> NameRecord:
    seen: list[Value] = []
    for value in values:
        record = value_of(value)
        assert record is not None
        seen.append(record)
    return NameRecord("x", [Seen(v, ["train"]) for v in seen], len(values), more)


def test_a_hint_shows_the_first_shapes_and_counts_the_rest() -> None:
    batches = [torch.zeros(n, 10) for n in (64, 100, 7, 3, 1)]
    assert hint_label(recorded(*batches)) == "x: f32[64, 10] | f32[100, 10] | f32[7, 10] | +2 more"
    assert hint_label(recorded(*batches[:2], more=3)) == "x: f32[64, 10] | f32[100, 10] | …"


def test_a_large_structure_is_cut_in_the_hint_and_whole_in_the_hover() -> None:
    # An optimizer's param group: a dict holding a list of parameters, then numbers.
    group = {"params": [torch.zeros(65, 384), torch.zeros(256, 384)] * 4, "lr": 1e-3, "eps": 1e-8}
    name = recorded(group)
    label = hint_label(name)
    assert label.startswith("x: {params: [f32[65, 384], f32[256, 384]")
    assert len(label) == len("x: ") + LABEL_SHAPE_CHARS and label.endswith("…")
    hover = hover_markdown(name, RUN)
    assert "lr: float, eps: float}" in hover
    assert "quick-dev run `20261124-184558-train-b2e1` (started 2026-11-24 18:45 UTC)" in hover


def test_the_hover_shows_statistics_and_flags_nan_and_inf() -> None:
    values = torch.tensor([[1.0, float("nan")], [float("inf"), 3.0]], requires_grad=True)
    hover = hover_markdown(recorded(values), RUN)
    assert "`x: f32[2, 2] cpu grad NaN Inf` — training" in hover
    assert "min 1 · max 3 · mean 2 · **NaN 1** · **Inf 1**" in hover
