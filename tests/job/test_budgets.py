"""Default budgets: every loop style ends by itself, names the budget, advises the knob.

Each script under ``idioms/`` is a small copy of a public training-code idiom; each run
uses default flags, as a new user would, and must leave the script's folder as it was.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

IDIOMS = Path(__file__).parent / "idioms"


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the idioms in a folder of their own; runs go to a sibling folder."""
    folder = tmp_path / "project"
    shutil.copytree(IDIOMS, folder)
    return folder


def _run(run_quickdev: Any, project: Path, script: str, *args: str) -> dict[str, Any]:
    before = _tree(project)
    started = time.monotonic()
    run = run_quickdev(
        "--runs-dir", str(project.parent / "runs"), *args, str(project / script), cwd=project
    )
    assert run.returncode == 0, run.stderr
    assert time.monotonic() - started < 60, "a default-flag run must end in seconds"
    assert _tree(project) == before, "the run wrote into the script's folder"
    assert run.result is not None
    return run.result


def test_endless_trainer_stops_at_its_loaders_second_pass(run_quickdev: Any, project: Path) -> None:
    result = _run(run_quickdev, project, "endless_trainer.py")
    assert (result["status"], result["stop_reason"]) == ("stopped", "train_passes")
    (loader,) = result["loaders"]
    # The second pass starts (it might only have measured something); its first
    # training forward ends the job, so no step of a second epoch is taken.
    assert (loader["passes"], loader["batches"]) == (2, 3)
    assert result["optimizer_steps"] == 2
    assert result["limits"]["train_passes"] == 1


def test_reading_the_training_loader_again_without_training_is_no_second_epoch(
    run_quickdev: Any, project: Path
) -> None:
    result = _run(run_quickdev, project, "train_accuracy.py")
    # Epoch 0 peeks at a batch, trains, then measures accuracy over the same loader (no
    # step: allowed); epoch 1 peeks again, and its first training forward is one epoch
    # too many.
    assert (result["status"], result["stop_reason"]) == ("stopped", "train_passes")
    (loader,) = result["loaders"]
    assert (loader["passes"], loader["batches"]) == (5, 7)
    assert result["optimizer_steps"] == 2
    assert result["limits"]["one_epoch_options"] == []


def test_gpt_loop_stops_its_evaluation_and_names_eval_iters(
    run_quickdev: Any, project: Path
) -> None:
    result = _run(run_quickdev, project, "gpt_loop.py")
    assert (result["status"], result["stop_reason"]) == ("stopped", "eval_forwards")
    assert result["optimizer_steps"] == 0
    assert result["stop_advice"].startswith("eval_iters (default 200) at gpt_loop.py:")


def test_gpt_loop_with_a_larger_eval_budget_stops_at_loop_steps(
    run_quickdev: Any, project: Path
) -> None:
    result = _run(run_quickdev, project, "gpt_loop.py", "--eval-forwards", "400")
    assert (result["status"], result["stop_reason"]) == ("stopped", "loop_steps")
    assert result["optimizer_steps"] == result["loop_batches"] == 2
    assert "max_iters (default 5000)" in result["stop_advice"]


def test_word_lm_trains_hand_made_batches_within_the_loop_budget(
    run_quickdev: Any, project: Path
) -> None:
    result = _run(run_quickdev, project, "word_lm.py", "--batches", "3")
    assert (result["status"], result["stop_reason"]) == ("stopped", "loop_steps")
    assert result["limits"]["one_epoch_options"] == ["--epochs"]
    assert result["optimizer_steps"] == result["loop_batches"] == 3
    assert len(result["losses"]) == 3


def test_try_wrapped_loop_with_a_fixed_epoch_count_runs_one_epoch(
    run_quickdev: Any, project: Path
) -> None:
    result = _run(run_quickdev, project, "try_loop.py")
    assert (result["status"], result["stop_reason"]) == ("stopped", "train_passes")
    train, val = result["loaders"]
    assert (train["passes"], val["passes"]) == (2, 1)  # validation after the epoch still ran
    assert (train["batches"], result["optimizer_steps"]) == (3, 2)  # epoch 2 took no step


def test_budgets_are_overridable_and_reported(run_quickdev: Any, project: Path) -> None:
    result = _run(
        run_quickdev, project, "endless_trainer.py", "--train-passes", "3", "--timeout", "0"
    )
    assert result["stop_reason"] == "train_passes"
    assert (result["loaders"][0]["passes"], result["optimizer_steps"]) == (4, 6)
    limits = result["limits"]
    assert (limits["train_passes"], limits["timeout_s"], limits["eval_forwards"]) == (3, None, 20)


def test_default_timeout_is_a_backstop(run_quickdev: Any, project: Path) -> None:
    result = _run(run_quickdev, project, "try_loop.py")
    assert result["limits"]["timeout_s"] == 300


def test_terminal_summary_names_the_budget_and_the_knob(run_quickdev: Any, project: Path) -> None:
    run = run_quickdev(
        "--runs-dir",
        str(project.parent / "runs"),
        str(project / "gpt_loop.py"),
        cwd=project,
        json_output=False,
    )
    assert run.returncode == 0, run.stderr
    assert "stopped: eval_forwards (20 evaluation forwards in a row" in run.stderr
    assert "advice: eval_iters (default 200)" in run.stderr


def test_hf_trainer_runs_one_limited_epoch_into_the_run_dir(
    run_quickdev: Any, project: Path
) -> None:
    result = _run(run_quickdev, project, "hf_trainer.py")
    assert (result["status"], result["stop_reason"]) == ("passed", "completed"), result["error"]
    assert result["optimizer_steps"] == 2
    hf = Path(result["run_dir"]) / "hf"
    assert list(hf.rglob("events.out.tfevents.*")), "TensorBoard logs in the run dir"
    assert (hf / "out" / "final" / "model.safetensors").is_file()
    assert (hf / "out" / "pretrained" / "model.safetensors").is_file()
    assert list(hf.glob("out/checkpoint-2/*")), "the epoch's checkpoint in the run dir"
    for loader in result["loaders"]:
        assert loader["batches"] <= 2 * loader["passes"]
    # What the job replaced in the script's TrainingArguments is said, in its words.
    assert result["limits"]["settings_changed"] == [
        "TrainingArguments.num_train_epochs: 3 → 1",
        "TrainingArguments.dataloader_num_workers: 4 → 0",
    ]


def test_accelerate_loop_stops_after_one_epoch_and_saves_in_the_run_dir(
    run_quickdev: Any, project: Path
) -> None:
    result = _run(run_quickdev, project, "accelerate_loop.py", "--train-passes", "0")
    assert (result["status"], result["stop_reason"]) == ("passed", "completed"), result["error"]
    assert result["optimizer_steps"] == 10  # 5 epochs of 2 batches: the pass budget is off
    result = _run(run_quickdev, project, "accelerate_loop.py")
    assert (result["status"], result["stop_reason"]) == ("stopped", "train_passes")
    assert result["optimizer_steps"] == 2


def test_accelerate_saves_go_to_the_run_dir(run_quickdev: Any, project: Path) -> None:
    result = _run(run_quickdev, project, "accelerate_loop.py", "--train-passes", "5")
    assert result["status"] == "passed", result["error"]
    hf = Path(result["run_dir"]) / "hf"
    assert (hf / "checkpoints" / "model" / "model.safetensors").is_file()
    assert list((hf / "checkpoints" / "state").iterdir())


def test_fabric_loop_on_cpu_saves_and_logs_in_the_run_dir(run_quickdev: Any, project: Path) -> None:
    result = _run(run_quickdev, project, "fabric_loop.py")
    assert (result["status"], result["stop_reason"]) == ("stopped", "train_passes")
    assert result["optimizer_steps"] == 2
    run_dir = Path(result["run_dir"])
    assert (run_dir / "outputs" / "checkpoints" / "last.ckpt").is_file()
    assert list((run_dir / "lightning" / "logs").rglob("events.out.tfevents.*"))
    assert result["limits"]["settings_changed"] == ["Fabric.accelerator: 'cuda' → 'cpu'"]
