"""Default budgets: every loop style ends by itself, names the budget, advises the knob.

Each script under ``idioms/`` is a small copy of a public training-code idiom; each run
uses default flags, as a new user would, and must leave the script's folder as it was.
A budget ends the loop it bounds and the script runs to its end (``passed``, the loop in
``loops_ended``); ``tests/job/test_phases.py`` checks that the final phases ran.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.idioms import copy_idioms, run_idiom


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_idioms(tmp_path)


def _run(run_quickdev: Any, project: Path, script: str, *args: str) -> dict[str, Any]:
    # Framework idioms (Hugging Face, Lightning Fabric) import for seconds on a busy machine.
    result: dict[str, Any] = run_idiom(run_quickdev, project, script, *args, deadline_s=60).result
    return result


def _ended(result: dict[str, Any]) -> list[tuple[str, str, str, int]]:
    """(file name:line, role, budget, count) of each loop the budgets ended."""
    return [
        (f"{Path(e['file']).name}:{e['line']}", e["role"], e["budget"], e["count"])
        for e in result["loops_ended"]
    ]


def _line(project: Path, script: str, text: str) -> int:
    """The first line of ``script`` that starts (indentation aside) with ``text``."""
    lines = enumerate((project / script).read_text().splitlines(), 1)
    return next(n for n, line in lines if line.strip().startswith(text))


def test_endless_trainer_ends_its_loop_before_the_loaders_second_pass(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "endless_trainer.py")
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("passed", "completed")
    (loader,) = result["loaders"]
    # The first pass ends the `while True` around it: the loop ends before it asks the
    # loader again, and the script's own last line runs. It takes a batch in its body
    # (`next(it)`): it is the training loop.
    assert (loader["passes"], loader["batches"]) == (1, 2)
    assert result["optimizer_steps"] == 2
    assert "trained 2 steps" in run.stdout
    line = _line(project, "endless_trainer.py", "while True")
    assert _ended(result) == [(f"endless_trainer.py:{line}", "training", "train_passes", 1)]
    assert result["limits"]["train_passes"] == 1


def test_reading_the_training_loader_again_without_training_is_no_second_epoch(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "train_accuracy.py")
    result = run.result
    # Epoch 0 peeks at a batch, trains, then measures accuracy over the same loader (no
    # step: allowed); the epoch loop then ends before epoch 1 and the script finishes.
    assert (result["status"], result["stop_reason"]) == ("passed", "completed")
    (loader,) = result["loaders"]
    assert (loader["passes"], loader["batches"]) == (3, 5)
    assert result["optimizer_steps"] == 2
    assert "epoch 0 (batch 16): train accuracy" in run.stdout and "TRAINED" in run.stdout
    assert [role for _, role, _, _ in _ended(result)] == ["epoch"]
    assert result["limits"]["one_epoch_options"] == []


def test_gpt_loop_ends_its_evaluation_then_trains_and_names_eval_iters(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "gpt_loop.py")
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("passed", "completed")
    # estimate_loss() ends each split's loop after 20 forwards and returns what it
    # computed; the training steps that follow are taken and end the `while True`.
    assert "step 0: train" in run.stdout
    assert result["optimizer_steps"] == result["loop_batches"] == 2
    eval_line = _line(project, "gpt_loop.py", "for k in range(eval_iters)")
    train_line = _line(project, "gpt_loop.py", "while True")
    assert _ended(result) == [
        (f"gpt_loop.py:{eval_line}", "evaluation", "eval_forwards", 20),
        (f"gpt_loop.py:{train_line}", "training", "loop_steps", 2),
    ]
    assert [e["times"] for e in result["loops_ended"]] == [2, 1]  # the train and val splits
    assert result["phases"]["evaluation_forwards"] == 40
    assert result["stop_advice"].startswith("eval_iters (default 200) at gpt_loop.py:")


def test_gpt_loop_with_a_larger_eval_budget_evaluates_in_full(
    run_quickdev: Any, project: Path
) -> None:
    result = _run(run_quickdev, project, "gpt_loop.py", "--eval-forwards", "400")
    assert (result["status"], result["stop_reason"]) == ("passed", "completed")
    assert result["optimizer_steps"] == result["loop_batches"] == 2
    assert result["phases"]["evaluation_forwards"] == 400
    assert [role for _, role, _, _ in _ended(result)] == ["training"]
    assert "max_iters (default 5000)" in result["stop_advice"]


def test_word_lm_trains_hand_made_batches_within_the_loop_budget(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "word_lm.py", "--batches", "3")
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("passed", "completed")
    assert result["limits"]["one_epoch_options"] == ["--epochs"]
    assert result["optimizer_steps"] == result["loop_batches"] == 3
    assert len(result["losses"]) == 3
    assert "test ppl" in run.stdout  # the test evaluation after training ran
    # The one-epoch loop around the training loop ends by itself: not listed.
    assert [(role, count) for _, role, _, count in _ended(result)] == [
        ("training", 3),
        ("evaluation", 20),
    ]


def test_try_wrapped_loop_with_a_fixed_epoch_count_runs_one_epoch(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "try_loop.py")
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("passed", "completed")
    train, val = result["loaders"]
    assert (train["passes"], val["passes"]) == (1, 1)  # validation after the epoch still ran
    assert (train["batches"], result["optimizer_steps"]) == (2, 2)
    assert "epoch 0: val" in run.stdout and "interrupted" not in run.stdout
    assert [role for _, role, _, _ in _ended(result)] == ["epoch"]


def test_budgets_are_overridable_and_reported(run_quickdev: Any, project: Path) -> None:
    result = _run(
        run_quickdev, project, "endless_trainer.py", "--train-passes", "3", "--timeout", "0"
    )
    assert (result["status"], result["stop_reason"]) == ("passed", "completed")
    assert (result["loaders"][0]["passes"], result["optimizer_steps"]) == (3, 6)
    assert [(budget, count) for _, _, budget, count in _ended(result)] == [("train_passes", 3)]
    limits = result["limits"]
    assert (limits["train_passes"], limits["timeout_s"], limits["eval_forwards"]) == (3, None, 20)


def test_default_timeout_is_a_backstop(run_quickdev: Any, project: Path) -> None:
    result = _run(run_quickdev, project, "try_loop.py")
    assert result["limits"]["timeout_s"] == 300


def test_terminal_summary_names_each_loop_ended_and_the_knob(
    run_quickdev: Any, project: Path
) -> None:
    run = run_quickdev(
        "--runs-dir",
        str(project.parent / "runs"),
        str(project / "gpt_loop.py"),
        cwd=project,
        json_output=False,
    )
    assert run.returncode == 0, run.stderr
    eval_line = _line(project, "gpt_loop.py", "for k in range(eval_iters)")
    train_line = _line(project, "gpt_loop.py", "while True")
    assert (
        f"gpt_loop.py:{eval_line} evaluation loop ended after 20 forwards, 2 times "
        "(eval_forwards): a figure it computes over all its forwards (a mean, an accuracy) "
        "covers these 20 only" in run.stderr
    )
    assert f"gpt_loop.py:{train_line} training loop ended after 2 steps (loop_steps)" in run.stderr
    assert "advice: eval_iters (default 200)" in run.stderr
    assert "quickdev: passed" in run.stderr and "stopped:" not in run.stderr


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


def test_accelerate_loop_ends_after_one_epoch_and_saves_in_the_run_dir(
    run_quickdev: Any, project: Path
) -> None:
    result = _run(run_quickdev, project, "accelerate_loop.py", "--train-passes", "0")
    assert (result["status"], result["stop_reason"]) == ("passed", "completed"), result["error"]
    assert result["optimizer_steps"] == 10  # 5 epochs of 2 batches: the pass budget is off
    result = _run(run_quickdev, project, "accelerate_loop.py")
    assert (result["status"], result["stop_reason"]) == ("passed", "completed")
    assert result["optimizer_steps"] == 2
    assert [role for _, role, _, _ in _ended(result)] == ["epoch"]
    # The saves after the epoch loop ran, into the run directory.
    assert (Path(result["run_dir"]) / "hf" / "checkpoints" / "model").is_dir()


def test_accelerate_saves_go_to_the_run_dir(run_quickdev: Any, project: Path) -> None:
    result = _run(run_quickdev, project, "accelerate_loop.py", "--train-passes", "5")
    assert result["status"] == "passed", result["error"]
    hf = Path(result["run_dir"]) / "hf"
    assert (hf / "checkpoints" / "model" / "model.safetensors").is_file()
    assert list((hf / "checkpoints" / "state").iterdir())


def test_fabric_loop_on_cpu_saves_and_logs_in_the_run_dir(run_quickdev: Any, project: Path) -> None:
    result = _run(run_quickdev, project, "fabric_loop.py")
    assert (result["status"], result["stop_reason"]) == ("passed", "completed")
    assert [role for _, role, _, _ in _ended(result)] == ["epoch"]
    assert result["optimizer_steps"] == 2
    run_dir = Path(result["run_dir"])
    assert (run_dir / "outputs" / "checkpoints" / "last.ckpt").is_file()
    assert list((run_dir / "lightning" / "logs").rglob("events.out.tfevents.*"))
    assert result["limits"]["settings_changed"] == ["Fabric.accelerator: 'cuda' → 'cpu'"]
