"""How a recorded name reads in the editor (``server/shape_words``), from values a job would
record (``limits/shapes/facts.value_of`` on real tensors)."""

from __future__ import annotations

from pathlib import Path

import torch
from quickdev.limits.shapes.facts import value_of
from quickdev.rundir.shapes import (
    LOOKS_STOPPED,
    LOOP_ITEMS_LOOKED,
    LOOP_WENT_ON,
    MORE_COUNTED,
    Cut,
    NameRecord,
    Seen,
    Value,
)
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
    # Values counted beyond those kept are more too; past the count's bound, at least that.
    assert hint_label(recorded(*batches, more=3)) == (
        "x: f32[64, 10] | f32[100, 10] | f32[7, 10] | +5 more"
    )
    assert hint_label(recorded(*batches[:2], more=3)) == "x: f32[64, 10] | f32[100, 10] | +3 more"
    most = hint_label(recorded(*batches[:1], more=MORE_COUNTED))
    assert most == f"x: f32[64, 10] | +{MORE_COUNTED}+ more"
    assert f"and at least {MORE_COUNTED} more" in hover_markdown(
        recorded(*batches[:1], more=MORE_COUNTED), RUN
    )


def test_a_hint_says_when_the_run_may_have_bound_shapes_not_looked_at() -> None:
    for why, words in (
        (LOOP_WENT_ON, f"the loop went on past its first {LOOP_ITEMS_LOOKED} items"),
        (LOOKS_STOPPED, "this line was no longer looked at when a later look found"),
    ):
        name = recorded(torch.zeros(65, 384))
        name.partial = why
        assert hint_label(name) == "x: f32[65, 384] | …"
        assert words in hover_markdown(name, RUN)


def test_a_shape_a_budget_cut_short_says_so_and_the_hover_says_which_loop() -> None:
    name = recorded(torch.zeros(64, 10), torch.zeros(33, dtype=torch.int64))
    name.seen[1].cut = Cut("/project/mingpt/model.py", 295, "eval_forwards", 20, "forwards")
    assert hint_label(name) == "x: f32[64, 10] | i64[33] (cut by budget)"
    hover = hover_markdown(name, RUN)
    assert (
        "**Cut short by a budget**: the loop at model.py:295 was ended by the eval_forwards "
        "budget after 20 forwards while this was made; a full run may give other values, or "
        "another shape."
    ) in hover
    name.seen[1].cut = Cut("/project/eval.py", 12, "batches", 2, "batches")
    assert "the pass over a DataLoader at eval.py:12 stopped after 2 batch(es) (--batches)" in (
        hover_markdown(name, RUN)
    )


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
