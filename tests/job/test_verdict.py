"""The verdict of real jobs (rundir/verdict.py): a NaN loss and a job that trained nothing
are failures said first; an error of Quickdev's own is `error`; a clean run passes."""

from __future__ import annotations

from pathlib import Path

import pytest
from quickdev.job.terminal_summary import summarize
from quickdev.processes import EXIT_FAILED, EXIT_PASSED
from quickdev.rundir.result import JobResult

from tests.support.cli import quickdev_run

SCRIPTS = Path(__file__).parent / "verdict_scripts"


TRAINS_WELL = """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(10):
    loss = ((model(torch.ones(8, 4)) - 1) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def _copy(name: str, folder: Path) -> Path:
    script = folder / name
    script.write_text((SCRIPTS / name).read_text())
    return script


def _line_of(script: Path, text: str) -> int:
    return next(i for i, line in enumerate(script.read_text().splitlines(), 1) if text in line)


def test_a_loss_that_became_nan_without_the_hunt_fails_at_its_backward_line(
    tmp_path: Path,
) -> None:
    script = _copy("nan_loss.py", tmp_path)
    run = quickdev_run("--batches", "4", str(script), cwd=tmp_path)
    assert "after training: saved" in run.stdout  # the script ran to its end
    assert run.returncode == EXIT_FAILED, run.stderr
    result = run.result
    assert result is not None
    assert result["status"] == "failed"
    assert result["stop_reason"] == "nonfinite_loss"
    assert result["error"]["type"] == "NonFiniteLoss"
    assert result["error"]["line"] == _line_of(script, "loss.backward()")
    assert result["problems"][0]["kind"] == "nonfinite_loss"
    assert result["problems"][0]["step"] == 2
    # Said first, in the terminal too: the headline, then the reason and the way to find it.
    summary = summarize(JobResult.from_dict(result)).splitlines()
    assert summary[0].startswith("quickdev: failed")
    assert "the training loss became nan at step 2" in summary[1]
    assert "--find-nonfinite" in summary[1]
    assert not any(line.lstrip().startswith("error:") for line in summary), "said once"


def test_a_script_that_built_an_optimizer_and_exited_before_training_fails(
    tmp_path: Path,
) -> None:
    script = _copy("early_exit.py", tmp_path)
    run = quickdev_run(str(script), cwd=tmp_path)
    assert "nothing to train on" in run.stdout
    assert run.returncode == EXIT_FAILED, run.stderr
    result = run.result
    assert result is not None
    assert (result["status"], result["stop_reason"]) == ("failed", "no_training")
    assert result["optimizer_steps"] == 0
    assert result["error"]["type"] == "NoTrainingStep"
    assert result["error"]["line"] == _line_of(script, "    sys.exit(0)")
    summary = summarize(JobResult.from_dict(result)).splitlines()
    assert "sys.exit(0) before its first training step" in summary[1]


def test_the_same_script_with_its_data_present_trains_and_passes(tmp_path: Path) -> None:
    """The guard above is the only difference: the verdict follows what ran."""
    script = _copy("early_exit.py", tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.bin").write_bytes(b"\0")
    run = quickdev_run(str(script), cwd=tmp_path)
    assert run.returncode == EXIT_PASSED, run.stderr
    assert run.result is not None
    assert run.result["status"] == "passed"
    assert run.result["optimizer_steps"] == 2
    assert run.result["problems"] == []


def test_steps_a_grad_scaler_skipped_are_steps_the_script_took(tmp_path: Path) -> None:
    """A float16 run's first steps can overflow at the scaler's first scale: the scaler
    skips the optimizer's step. The script trains; it is not 'trained nothing'."""
    script = _copy("scaler_skips.py", tmp_path)
    run = quickdev_run(str(script), cwd=tmp_path)
    assert "scale now" in run.stdout  # the script ran to its end
    assert run.returncode == EXIT_PASSED, run.stderr
    assert run.result is not None
    assert (run.result["status"], run.result["problems"]) == ("passed", [])
    assert (run.result["optimizer_steps"], run.result["scaler_skipped_steps"]) == (0, 2)
    summary = summarize(JobResult.from_dict(run.result))
    assert "steps: 0, 2 skipped by the GradScaler" in summary


def test_a_script_with_nothing_to_train_passes(tmp_path: Path) -> None:
    script = _copy("inference_only.py", tmp_path)
    run = quickdev_run(str(script), cwd=tmp_path)
    assert "inference done" in run.stdout
    assert run.returncode == EXIT_PASSED, run.stderr
    assert run.result is not None
    assert (run.result["status"], run.result["problems"]) == ("passed", [])


def test_an_observer_that_fails_is_quickdevs_error_not_a_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in fault: no observer fails on this torch (the profiler's does on torch
    releases before 2.12, which `make compat` runs); the observer raises as that one did."""
    import quickdev
    from quickdev.job.scalars import ScalarWriter

    def broken(self: ScalarWriter, step: int, step_time_s: float) -> None:
        raise AttributeError("'FunctionEvent' object has no attribute 'is_python_function'")

    monkeypatch.setattr(ScalarWriter, "on_train_step", broken)
    script = tmp_path / "train.py"
    script.write_text(TRAINS_WELL)
    monkeypatch.chdir(tmp_path)
    result = quickdev.run(script, batches=4, runs_dir=tmp_path / "runs")
    assert result.status == "error"
    assert result.error is None  # the script did nothing wrong
    assert [(p.kind, p.feature) for p in result.problems] == [
        ("quickdev_error", "the TensorBoard scalars")
    ]
    summary = summarize(result).splitlines()
    assert summary[0].startswith("quickdev: error")
    assert "Quickdev's own error, not your code's: the TensorBoard scalars failed" in summary[1]
    assert "is_python_function" in summary[1]
    assert summary[2] == "  your script ran to its end (4 training steps)"
