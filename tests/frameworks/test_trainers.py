"""Trainers whose epoch loop is a library's (pytorch-ignite's ``Engine.run``, skorch's
``fit``) and loops over accelerate's prepared objects: each public example's idiom runs
with default flags to its end (``passed``), the code after training runs, the summary says
which knob of the library bounded its loop, nothing is left in the script's folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.idioms import copy_idioms, run_idiom


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_idioms(tmp_path)


def test_ignite_engine_runs_one_epoch_with_its_evaluator_and_checkpoint(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "ignite_mnist.py", deadline_s=60)
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("passed", "completed"), result["error"]
    # --epochs 10 (its default) became 1; the evaluator ran at the epoch's end, and the
    # code after trainer.run() printed what it measured.
    assert result["limits"]["one_epoch_options"] == ["--epochs"]
    assert "Validation Results - Epoch: 1" in run.stdout
    assert "FINAL: 1 epochs, 2 iterations" in run.stdout
    assert result["optimizer_steps"] == 2
    (checkpoint,) = [o for o in result["outputs"] if Path(o["requested"]).suffix == ".pt"]
    assert Path(checkpoint["requested"]).parent == project / "mnist_save_resume"
    assert Path(checkpoint["written"]).is_file()


def test_ignite_epochs_given_on_the_command_line_run_and_are_said(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(
        run_quickdev, project, "ignite_mnist.py", script_args=("--epochs=3",), deadline_s=90
    )
    result = run.result
    assert result["status"] == "passed", result["error"]
    assert "FINAL: 3 epochs, 6 iterations" in run.stdout
    assert result["limits"]["settings_changed"] == [
        "Engine.run's max_epochs: 3 kept, the train_passes budget being 3 "
        "(the epoch loop is ignite's own; Engine.run's max_epochs is its knob)"
    ]


def test_ignite_engine_run_above_the_budget_is_limited_through_max_epochs(
    run_quickdev: Any, project: Path
) -> None:
    """A max_epochs the script hard-codes (no epochs option for argparse to set to 1)."""
    script = project / "ignite_mnist.py"
    script.write_text(script.read_text().replace("max_epochs=epochs)", "max_epochs=10)"))
    run = run_idiom(run_quickdev, project, "ignite_mnist.py", deadline_s=60)
    result = run.result
    assert result["status"] == "passed", result["error"]
    assert "FINAL: 1 epochs, 2 iterations" in run.stdout
    assert result["limits"]["settings_changed"] == [
        "Engine.run's max_epochs: 10 → 1 "
        "(the epoch loop is ignite's own; Engine.run's max_epochs is its knob)"
    ]


def test_skorch_fit_ends_after_one_epoch_and_predict_and_save_run(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "skorch_readme.py", deadline_s=60)
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("passed", "completed"), result["error"]
    assert "FINAL: 1 epochs, predicted" in run.stdout
    assert result["limits"]["settings_changed"] == [
        "NeuralNetClassifier.max_epochs: 50 → 1 "
        "(the epoch loop is skorch's own; NeuralNetClassifier.max_epochs is its knob)"
    ]
    # Its training and validation passes (skorch's own split), then predict's.
    assert [loader["batches"] for loader in result["loaders"]] == [2, 2, 1]
    (saved,) = [o for o in result["outputs"] if Path(o["requested"]).name == "model.pkl"]
    assert Path(saved["written"]).is_file()


def test_an_accelerate_loop_gathers_its_metrics_and_saves_its_state(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "accelerate_loop.py", deadline_s=60)
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("passed", "completed"), result["error"]
    assert "FINAL: 2 eval batches gathered, state and model saved" in run.stdout
    hf = Path(result["run_dir"]) / "hf"
    assert list((hf / "checkpoints" / "state").iterdir())
    assert (hf / "checkpoints" / "model" / "model.safetensors").is_file()
