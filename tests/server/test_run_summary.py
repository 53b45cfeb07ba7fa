"""The Runs view's numbers come from result.json as the job wrote it."""

from __future__ import annotations

import json
from pathlib import Path

from quickdev.rundir.result import JobResult, LoaderStats
from quickdev.rundir.validate import structure
from quickdev.server.run_summary import run_summary


def test_hand_made_batches_count_as_batches(tmp_path: Path) -> None:
    # A word-language-model loop: no DataLoader, three training steps on sliced tensors.
    result = JobResult(id="r", status="stopped", optimizer_steps=3, loop_batches=3)
    assert run_summary(tmp_path, result)["batches"] == 3
    result.loaders = [LoaderStats(origin="train.py:9", passes=1, batches=2)]
    assert run_summary(tmp_path, result)["batches"] == 5


# The result the extension's page tests render (tests/extension/results/resultPage.test.ts).
PAGE_FIXTURE = (
    Path(__file__).resolve().parent.parent / "extension" / "results" / "fixtures" / "result.json"
)


def test_the_result_page_fixture_is_a_result_json_of_today() -> None:
    # Every field there, each of the type the job writes, none renamed or gone: the page is
    # tested on what the job writes, not on a shape of the past.
    data = json.loads(PAGE_FIXTURE.read_text())
    assert structure(data, JobResult).to_dict() == data


def test_what_the_run_changed_is_one_line_each_and_ends_with_the_budget() -> None:
    result = JobResult.from_dict(json.loads(PAGE_FIXTURE.read_text()))
    assert run_summary(PAGE_FIXTURE.parent, result)["changes"] == [
        "one epoch: --epochs set to 1 (pass it explicitly to keep your value)",
        "settings: Trainer.max_epochs: 10 → 1",
        "device: cpu instead of what the script asked "
        "(Tensor.to 45, autocast cuda float16 -> cpu bfloat16 1)",
        "autocast: cuda float16 regions ran in bfloat16: bfloat16 is fastest on this CPU "
        "(bfloat16 1.80×, float16 0.05× float32's speed)",
        "outputs: 4 file(s) kept in the run dir, your files as they were",
        "your edits: notes.txt kept as you saved them while the job ran; the versions from "
        f"before the job are in {result.run_dir}/originals",
        "not put back: data.bin changed by something the journal does not follow "
        "(not Python, an unknown library, or you); no copy was kept",
        "stopped: train_passes (1 pass(es) over the training loader; --train-passes changes it)",
        f"advice: {result.stop_advice}",
    ]
    result.status, result.stop_reason = "passed", "completed"
    result.limits.one_epoch_options, result.limits.settings_changed = [], []
    result.device, result.outputs, result.file_safety = None, [], None
    assert run_summary(PAGE_FIXTURE.parent, result)["changes"] == []
