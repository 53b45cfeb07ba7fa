"""The Runs view's numbers come from result.json as the job wrote it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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


HUNT_FIXTURE = PAGE_FIXTURE.parent / "result_nonfinite.json"


@pytest.mark.parametrize("fixture", [PAGE_FIXTURE, HUNT_FIXTURE], ids=["run", "nan hunt"])
def test_the_result_page_fixture_is_a_result_json_of_today(fixture: Path) -> None:
    # Every field there, each of the type the job writes, none renamed or gone: the page is
    # tested on what the job writes, not on a shape of the past.
    data = json.loads(fixture.read_text())
    assert structure(data, JobResult).to_dict() == data


def test_a_nan_hunt_says_its_budget_and_what_it_found() -> None:
    result = JobResult.from_dict(json.loads(HUNT_FIXTURE.read_text()))
    assert run_summary(HUNT_FIXTURE.parent, result)["changes"] == [
        "NaN hunt: trained up to 500 steps, past --batches and one epoch; "
        "the first NaN/Inf reached the loss at step 8",
    ]
    result.first_nonfinite, result.optimizer_steps = None, 500
    assert run_summary(HUNT_FIXTURE.parent, result)["changes"][0].endswith(
        "no NaN/Inf reached the loss, a gradient or a parameter in 500 steps"
    )
    # The summary says it was a hunt, so Run Again hunts again; another run says nothing.
    assert run_summary(HUNT_FIXTURE.parent, result)["findNonfinite"] is True
    plain = JobResult.from_dict(json.loads(PAGE_FIXTURE.read_text()))
    assert "findNonfinite" not in run_summary(PAGE_FIXTURE.parent, plain)


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
        "not checked for other programs' changes: .venv (a Python environment)",
        "train.py:61 evaluation loop ended after 20 forwards, 2 times (eval_forwards): "
        "a figure it computes over all its forwards (a mean, an accuracy) covers these 20 only, "
        "and reads low where the script divides by the full count",
        "stopped: train_passes (1 pass(es) over the training loader; --train-passes changes it)",
        f"advice: {result.stop_advice}",
    ]
    result.status, result.stop_reason = "passed", "completed"
    result.limits.one_epoch_options, result.limits.settings_changed = [], []
    result.device, result.outputs, result.file_safety = None, [], None
    result.loops_ended = []
    assert run_summary(PAGE_FIXTURE.parent, result)["changes"] == []


def test_a_memory_forecast_is_summarised_in_its_one_line() -> None:
    result = JobResult.from_dict(json.loads(PAGE_FIXTURE.read_text()))
    summary = run_summary(PAGE_FIXTURE.parent, result)
    # 11.2 GB at the peak; of the devices it fits, the smallest (8 GB does not fit).
    assert summary["memoryForecast"] == "≈ 11.2 GB peak · fits 24 GB"
    result.memory_forecast = None
    assert "memoryForecast" not in run_summary(PAGE_FIXTURE.parent, result)
