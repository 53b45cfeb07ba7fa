"""A job killed from outside (SIGKILL, the OOM killer) gets an honest final status from the
next quickdev command, where its result.json would otherwise say ``running`` forever."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from quickdev.rundir import killed
from quickdev.rundir.process import OOM_KILLS_KEY

# Trains a step, says so, then waits to be killed.
TRAINS_THEN_HANGS = """
import time
import torch
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.randn(8, 4)).sum().backward()
optimizer.step()
print("trained", flush=True)
time.sleep(120)
"""


def _start_and_kill(tmp_path: Path, processes: list[subprocess.Popen[bytes]]) -> Path:
    (tmp_path / "hang.py").write_text(TRAINS_THEN_HANGS)
    proc = subprocess.Popen(
        [sys.executable, "-m", "quickdev", "run", "--run-id", "hanging", "hang.py"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    processes.append(proc)
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    while b"trained" not in proc.stdout.readline():
        assert time.monotonic() < deadline and proc.poll() is None, "the job never trained"
    time.sleep(1.0)  # it lived a while: the duration must say so
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    run_dir = tmp_path / ".quickdev" / "runs" / "hanging"
    assert json.loads((run_dir / "result.json").read_text())["status"] == "running"
    return run_dir


def test_a_sigkilled_job_is_relabelled_by_the_next_command(
    run_quickdev: Any, tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    run_dir = _start_and_kill(tmp_path, processes)
    (tmp_path / "noop.py").write_text("print('hello')\n")
    run = run_quickdev("noop.py", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    (line,) = [line for line in run.stderr.splitlines() if line.startswith("quickdev: run hanging")]
    assert line.startswith("quickdev: run hanging was killed"), run.stderr
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "killed"
    assert result["stop_reason"].startswith("killed")
    assert result["duration_s"] >= 1.0  # from its start to the last file it wrote
    # Settled once: the command after says nothing more about it.
    again = run_quickdev("noop.py", cwd=tmp_path)
    assert "quickdev: run hanging" not in again.stderr


def test_an_oom_kill_in_the_jobs_cgroup_says_out_of_memory(
    tmp_path: Path, processes: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real OOM kill would take this shared machine's memory: the kernel's count is the one
    # thing stood in for (a mock, said so). The job and its death are real.
    run_dir = _start_and_kill(tmp_path, processes)
    record = json.loads((run_dir / "process.json").read_text())
    if OOM_KILLS_KEY not in record:
        pytest.skip("this host's memory cgroup has no readable OOM kill count")
    _, count = record[OOM_KILLS_KEY]
    monkeypatch.setattr(killed, "memory_oom_kills", lambda group: (group, count + 1))
    line = killed.settle_run(run_dir)
    assert line is not None and "killed: out of memory?" in line
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "killed"
    assert result["stop_reason"].startswith("killed: out of memory? (the kernel's OOM killer")


def test_a_signal_the_server_saw_is_named(
    tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    run_dir = _start_and_kill(tmp_path, processes)
    line = killed.settle_run(run_dir, exit_signal=signal.SIGKILL)
    assert line is not None
    result = json.loads((run_dir / "result.json").read_text())
    assert (
        result["stop_reason"] in ("killed by SIGKILL",) or "out of memory?" in result["stop_reason"]
    )
