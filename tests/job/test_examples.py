"""Every bundled example through the real ``quickdev run``: limits hold, results are right."""

from __future__ import annotations

import hashlib
import pickle
import re
import runpy
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.support.checkpoints import save_as_if_on
from tests.support.paths import EXAMPLES
from tests.support.stand_in import CUDA


def _origin_line(loader: dict[str, Any]) -> int:
    return int(loader["origin"].rpartition(":")[2])


@pytest.fixture(scope="module")
def train_loop(
    run_quickdev: Any, examples_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    cwd = tmp_path_factory.mktemp("train_loop")
    return run_quickdev(
        "--batches", "3", str(examples_dir / "train_loop.py"), "--", "--epochs", "2", cwd=cwd
    )


def test_train_loop_runs_three_batches_per_pass(train_loop: Any, examples_dir: Path) -> None:
    assert train_loop.returncode == 0, train_loop.stderr
    result = train_loop.result
    assert result["status"] == "passed"
    assert result["stop_reason"] == "completed"
    assert result["script"] == str(examples_dir / "train_loop.py")
    assert result["argv"][1:] == ["--epochs", "2"]
    loaders = result["loaders"]
    # train, val and test loaders, each created on its own line of the script
    assert len(loaders) == 3
    assert len({_origin_line(loader) for loader in loaders}) == 3
    assert all(
        loader["origin"].startswith(str(examples_dir / "train_loop.py")) for loader in loaders
    )
    train, val, test = loaders
    assert (train["passes"], train["batches"]) == (2, 6)
    assert (val["passes"], val["batches"]) == (2, 6)
    assert (test["passes"], test["batches"]) == (1, 3)
    assert train["batch_signature"] == "[float32[32, 32] cpu, float32[32, 1] cpu]"
    assert not train["nonfinite"]
    assert train["data_wait_s"] > 0
    assert result["optimizer_steps"] == 6
    assert len(result["losses"]) == 6
    assert all(loss > 0 for loss in result["losses"])
    assert result["peak_rss_mb"] > 50
    assert result["limits"]["batches"] == 3
    # Where the job ran it: this machine's GPU, else the CPU standing in for CUDA.
    assert result["limits"]["device"] == ("cuda:0" if CUDA else "cpu")


def test_train_loop_writes_run_files(train_loop: Any) -> None:
    run_dir = train_loop.run_dir
    assert (run_dir / "result.json").is_file()
    assert (run_dir / "job.log").read_text().count("job ended: passed") == 1
    progress = (run_dir / "progress.json").read_text()
    assert '"stage": "done"' in progress and '"steps": 6' in progress
    assert list(run_dir.glob("events.out.tfevents.*")), "no TensorBoard event file in the run dir"
    output = (run_dir / "output.log").read_text()
    assert "epoch 1: train loss" in output and "test loss" in output
    assert "epoch 1: train loss" in train_loop.stdout  # still on the terminal too


def test_train_loop_scalars_reach_tensorboard(train_loop: Any) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(train_loop.run_dir))
    accumulator.Reload()
    tags = accumulator.Tags()["scalars"]
    assert "quickdev/loss" in tags
    assert "quickdev/step_time_s" in tags
    assert "quickdev/data_wait_s" in tags
    losses = [event.value for event in accumulator.Scalars("quickdev/loss")]
    assert losses == pytest.approx(train_loop.result["losses"], rel=1e-5)


def test_human_summary_without_json(run_quickdev: Any, examples_dir: Path, tmp_path: Path) -> None:
    run = run_quickdev(
        str(examples_dir / "train_loop.py"), "--", "--epochs", "1", cwd=tmp_path, json_output=False
    )
    assert run.returncode == 0, run.stderr
    assert "quickdev: passed" in run.stderr
    assert run.stderr.count("  loader ") == 3
    assert "steps: 2" in run.stderr
    assert "run dir: .quickdev/runs/" in run.stderr
    assert not run.stdout.strip().splitlines()[-1].startswith("{")


@pytest.fixture(scope="module")
def lightning_run(
    run_quickdev: Any, examples_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    cwd = tmp_path_factory.mktemp("lightning")
    return run_quickdev(str(examples_dir / "lightning_module.py"), cwd=cwd), cwd


def test_lightning_gets_fast_dev_run_limits(lightning_run: Any) -> None:
    run, _ = lightning_run
    assert run.returncode == 0, run.stderr
    result = run.result
    assert result["status"] == "passed"
    # train, val and test loaders: two batches each, one epoch, no sanity check
    assert [(loader["passes"], loader["batches"]) for loader in result["loaders"]] == [(1, 2)] * 3
    assert result["optimizer_steps"] == 2
    assert len(result["losses"]) == 2
    if not torch.cuda.is_available():
        # The job put the Trainer on this CPU: Lightning hears that no GPU is here (the CUDA
        # stand-in answers the script), and does not advise accelerator='gpu'.
        printed = run.stdout + run.stderr
        assert "GPU available: False" in printed
        assert "GPU available but not used" not in printed


def test_lightning_ends_at_max_steps_and_finishes(
    run_quickdev: Any, examples_dir: Path, tmp_path: Path
) -> None:
    run = run_quickdev(
        "--batches",
        "3",
        "--max-steps",
        "1",
        str(examples_dir / "lightning_module.py"),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    # Lightning ends the fit gracefully at the budget and the script runs to its end.
    assert (run.result["status"], run.result["stop_reason"]) == ("passed", "completed")
    assert run.result["optimizer_steps"] == 1
    assert run.result["loops_ended"] == []  # the trainer's loop is the framework's own
    # Validation and test still run.
    train, val, test = run.result["loaders"]
    assert train["batches"] == 1
    assert (val["batches"], test["batches"]) == (3, 3)


def test_lightning_keeps_logs_and_checkpoints_in_run_dir(lightning_run: Any) -> None:
    run, cwd = lightning_run
    run_dir = run.run_dir
    checkpoints = list(run_dir.rglob("*.ckpt"))
    assert len(checkpoints) == 1
    assert list((run_dir / "lightning" / "lightning_logs").rglob("events.out.tfevents.*"))
    assert not (cwd / "checkpoints").exists()
    assert not (cwd / "lightning_logs").exists()
    redirected = [o for o in run.result["outputs"] if o["change"] == "redirected"]
    assert [Path(o["requested"]) for o in redirected] == [cwd / "checkpoints"]
    assert checkpoints[0].is_relative_to(Path(redirected[0]["written"]))


@pytest.fixture(scope="module")
def cuda_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint whose tensors say they live on cuda:1, as one saved by a GPU run does."""
    net_class = runpy.run_path(str(EXAMPLES / "autocast_step.py"), run_name="example")["Net"]
    path = tmp_path_factory.mktemp("ckpt") / "gpu-run.pt"
    model = net_class()
    save_as_if_on({"model": model.state_dict()}, path, "cuda:1")
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.load(path)
    return path


def test_cuda_script_runs_on_cpu(
    run_quickdev: Any, examples_dir: Path, cuda_checkpoint: Path, tmp_path: Path
) -> None:
    run = run_quickdev(
        "--device",
        "cpu",
        str(examples_dir / "autocast_step.py"),
        "--",
        "--epochs",
        "2",
        "--resume",
        str(cuda_checkpoint),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert run.result["status"] == "passed"
    # len(loader) agrees with the limit the script sees while iterating
    assert "epoch 1: loss" in run.stdout and "2 batches" in run.stdout
    (loader,) = run.result["loaders"]
    assert (loader["passes"], loader["batches"]) == (2, 4)
    assert loader["batch_signature"] == "{features: float32[64, 48] cpu, label: int64[64] cpu}"
    assert run.result["optimizer_steps"] == 4


def test_char_lm_ends_its_loop_at_max_steps(
    run_quickdev: Any, examples_dir: Path, tmp_path: Path
) -> None:
    run = run_quickdev("--max-steps", "5", str(examples_dir / "char_lm.py"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (run.result["status"], run.result["stop_reason"]) == ("passed", "completed")
    (loop,) = run.result["loops_ended"]
    assert (loop["role"], loop["budget"], loop["count"]) == ("training", "max_steps", 5)
    assert run.result["optimizer_steps"] == 5
    assert len(run.result["losses"]) == 5
    assert run.result["loaders"] == []


def test_hand_written_sgd_counts_forward_passes(
    run_quickdev: Any, examples_dir: Path, tmp_path: Path
) -> None:
    run = run_quickdev(
        "--max-steps", "4", str(examples_dir / "char_lm.py"), "--", "--manual-sgd", cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    assert (run.result["status"], run.result["stop_reason"]) == ("passed", "completed")
    assert [e["budget"] for e in run.result["loops_ended"]] == ["max_steps"]
    assert run.result["optimizer_steps"] == 4
    assert len(run.result["losses"]) == 4


def test_char_lm_stops_at_timeout(run_quickdev: Any, examples_dir: Path, tmp_path: Path) -> None:
    # The loop-steps budget would end it first; switched off, the timeout must.
    run = run_quickdev(
        "--timeout", "5", "--loop-steps", "0", str(examples_dir / "char_lm.py"), cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    assert run.result["status"] == "stopped"
    assert run.result["stop_reason"] == "timeout"
    # The budget covers the whole job, imports included; 3000 iterations take far longer.
    assert 5 <= run.result["duration_s"] < 30
    # The alarm may land between backward() and the optimizer step.
    steps = run.result["optimizer_steps"]
    assert steps <= len(run.result["losses"]) <= steps + 1


def test_save_model_redirects_and_keeps_user_file(
    run_quickdev: Any, examples_dir: Path, tmp_path: Path
) -> None:
    existing = tmp_path / "model.pt"
    existing.write_bytes(pickle.dumps("the user's trained model"))
    before = hashlib.sha256(existing.read_bytes()).hexdigest()
    run = run_quickdev(str(examples_dir / "save_model.py"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "saved and reloaded model.pt" in run.stdout
    assert hashlib.sha256(existing.read_bytes()).hexdigest() == before
    redirected = {r["requested"]: Path(r["written"]) for r in run.result["outputs"]}
    assert set(redirected) == {
        str(tmp_path / "model.pt"),
        str(tmp_path / "checkpoints" / "epoch-0.pt"),  # one epoch: --epochs 3 became 1
    }
    assert run.result["limits"]["one_epoch_options"] == ["--epochs"]
    for written in redirected.values():
        assert written.is_relative_to(run.run_dir)
    state = torch.load(redirected[str(tmp_path / "model.pt")], weights_only=True)
    assert set(state) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    assert not list((tmp_path / "checkpoints").glob("*.pt"))


def test_crash_points_at_the_helper_line(
    run_quickdev: Any, examples_dir: Path, tmp_path: Path
) -> None:
    run = run_quickdev(str(examples_dir / "crash_deep.py"), cwd=tmp_path)
    assert run.returncode == 1
    assert run.result["status"] == "failed"
    error = run.result["error"]
    assert error["type"] == "RuntimeError"
    assert "cannot be multiplied" in error["message"]
    helpers = examples_dir / "crash_helpers.py"
    expected_line = next(
        i
        for i, text in enumerate(helpers.read_text().splitlines(), 1)
        if re.search(r"return layer\(x\)", text)
    )
    assert (error["file"], error["line"]) == (str(helpers), expected_line)
    frames = [(Path(f["file"]).name, f["function"]) for f in error["traceback"]]
    assert frames[0] == ("crash_deep.py", "<module>")
    assert ("crash_helpers.py", "project") in frames
    assert frames[-1][0] not in {"crash_deep.py", "crash_helpers.py"}  # innermost is in torch
