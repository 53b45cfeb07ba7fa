"""``quickdev.run`` in the current interpreter: same result fields, and nothing left patched."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
import quickdev
import torch
from quickdev.rundir.layout import PROGRESS_FILE
from quickdev.threads import is_own_thread
from torch.optim.optimizer import _global_optimizer_post_hooks
from torch.utils.data import DataLoader

from tests.support.paths import EXAMPLES


def test_callable_gets_limits_and_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    seen: dict[str, object] = {}

    def job() -> None:
        loader = DataLoader(torch.arange(100.0), batch_size=10)
        seen["len"] = len(loader)
        seen["batches"] = [batch[0].item() for batch in loader]
        model = torch.nn.Linear(1, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in loader:
            optimizer.zero_grad()
            model(batch.unsqueeze(1)).pow(2).mean().backward()
            optimizer.step()
        torch.save(model.state_dict(), "weights.pt")

    result = quickdev.run(job, batches=3)
    assert result.status == "passed"
    assert seen == {"len": 3, "batches": [0.0, 10.0, 20.0]}
    assert result.optimizer_steps == 3
    assert len(result.losses) == 3
    (loader,) = result.loaders
    assert loader.passes == 2 and loader.batches == 6
    assert loader.origin.startswith(f"{__file__}:")
    assert not (tmp_path / "weights.pt").exists()
    (redirection,) = result.outputs
    assert Path(redirection.written).is_file()
    on_disk = json.loads((Path(result.run_dir) / "result.json").read_text())
    assert on_disk["status"] == "passed" and on_disk["optimizer_steps"] == 3


def test_interpreter_is_restored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    before = (
        torch.save,
        torch.load,
        torch.compile,
        torch.Tensor.to,
        torch.Tensor.backward,
        torch.optim.Optimizer.__init__,
        DataLoader.__iter__,
        torch.serialization._open_zipfile_writer_file.__init__,
        sys.dont_write_bytecode,
        os.environ.get("WANDB_MODE"),
    )
    global_hooks = (
        len(torch.nn.modules.module._global_forward_hooks),
        len(_global_optimizer_post_hooks),
    )
    argv, path = list(sys.argv), list(sys.path)
    result = quickdev.run(str(EXAMPLES / "train_loop.py"), args=["--epochs", "1"])
    assert result.status == "passed"
    assert result.optimizer_steps == 2
    after = (
        torch.save,
        torch.load,
        torch.compile,
        torch.Tensor.to,
        torch.Tensor.backward,
        torch.optim.Optimizer.__init__,
        DataLoader.__iter__,
        torch.serialization._open_zipfile_writer_file.__init__,
        sys.dont_write_bytecode,
        os.environ.get("WANDB_MODE"),
    )
    assert after == before
    assert global_hooks == (
        len(torch.nn.modules.module._global_forward_hooks),
        len(_global_optimizer_post_hooks),
    )
    assert (sys.argv, sys.path) == (argv, path)
    assert len(DataLoader(torch.arange(100.0), batch_size=10)) == 10
    assert (
        "__init__" not in vars(torch.optim.Optimizer)
        or torch.optim.Optimizer.__init__.__module__ == "torch.optim.optimizer"
    )


def test_failure_is_returned_not_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    def broken() -> None:
        torch.ones(2, 3) @ torch.ones(2, 3)

    result = quickdev.run(broken)
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.file == __file__
    assert result.error.type == "RuntimeError"


def test_timeout_stops_a_callable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    result = quickdev.run(lambda: time.sleep(60), timeout_s=1)
    assert result.status == "stopped"
    assert result.stop_reason == "timeout"
    assert time.monotonic() - started < 30


def test_an_alarm_set_before_the_job_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 3.0)
        result = quickdev.run(lambda: None, timeout_s=60)
        assert result.status == "passed"
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < remaining <= 3.0
        deadline = time.monotonic() + 10
        while not fired and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fired == [signal.SIGALRM]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_missing_script_raises_value_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="no such script"):
        quickdev.run("missing.py")


def test_in_process_run_leaves_signal_handlers_alone(tmp_path: Path) -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT)}
    result = quickdev.run(lambda: None, runs_dir=tmp_path / "runs")
    assert result.status == "passed"
    assert {s: signal.getsignal(s) for s in before} == before


def test_a_run_leaves_no_thread_of_its_own_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notebook calls quickdev.run again and again: each run's threads end with it."""
    monkeypatch.chdir(tmp_path)
    before = set(threading.enumerate())

    def job() -> None:
        model = torch.nn.Linear(1, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in DataLoader(torch.arange(100.0), batch_size=10):
            optimizer.zero_grad()
            model(batch.unsqueeze(1)).pow(2).mean().backward()
            optimizer.step()

    for _ in range(2):
        result = quickdev.run(job, batches=3, runs_dir=tmp_path / "runs")
        assert result.status == "passed" and result.optimizer_steps == 3
        # The progress was written, by the job's writer thread.
        progress = json.loads((Path(result.run_dir) / PROGRESS_FILE).read_text())
        assert progress == {"stage": "done", "batches": 3, "steps": 3}
        left = [t for t in set(threading.enumerate()) - before if is_own_thread(t)]
        assert left == [], left
