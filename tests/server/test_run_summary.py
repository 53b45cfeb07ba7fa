"""The Runs view's numbers come from result.json as the job wrote it."""

from __future__ import annotations

from pathlib import Path

from quickdev.rundir.result import JobResult, LoaderStats
from quickdev.server.run_summary import run_summary


def test_hand_made_batches_count_as_batches(tmp_path: Path) -> None:
    # A word-language-model loop: no DataLoader, three training steps on sliced tensors.
    result = JobResult(id="r", status="stopped", optimizer_steps=3, loop_batches=3)
    assert run_summary(tmp_path, result)["batches"] == 3
    result.loaders = [LoaderStats(origin="train.py:9", passes=1, batches=2)]
    assert run_summary(tmp_path, result)["batches"] == 5
