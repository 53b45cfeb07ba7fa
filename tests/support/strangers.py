"""Run directories whose records name a live process that is not their job: a real
``sleep`` under the recorded PID, with a record that cannot prove it is the job's (no start
time, as a copied folder or an earlier quickdev left it; a wrong start time, as after the
PID was reused; another command line). Signalling the ``sleep`` (SIGUSR1, SIGTERM, SIGKILL)
ends it, so a test sees any signal sent by mistake."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from quickdev.processes import command_line, start_ticks

KINDS = ("no start time", "wrong start time", "another command line")


def stranger_run(runs_dir: Path, kind: str, processes: list[subprocess.Popen[bytes]]) -> Path:
    """A run directory ``runs_dir/<kind>`` that says ``running``, whose record names a live
    ``sleep`` leading its own process group (so a group signal would reach it too)."""
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    processes.append(sleeper)
    deadline = time.monotonic() + 30
    while (command := command_line(sleeper.pid)) != ("sleep", "300"):  # until it has exec'd
        assert command is not None, "this test needs /proc"
        assert time.monotonic() < deadline, f"sleep did not start: {command}"
        time.sleep(0.01)
    start = start_ticks(sleeper.pid)
    assert start is not None
    record: dict[str, object] = {"pid": sleeper.pid, "pgid": sleeper.pid}
    if kind == "wrong start time":
        record |= {"start": start - 100, "command": list(command)}
    elif kind == "another command line":
        record |= {"start": start, "command": ["python", "-m", "quickdev", "run", "train.py"]}
    else:
        assert kind == "no start time"
    run_dir = runs_dir / kind.replace(" ", "-")
    run_dir.mkdir(parents=True)
    result = {
        "schema": 1, "id": run_dir.name, "status": "running", "script": "train.py",
        "started": "2026-01-02T03:04:05+00:00", "duration_s": 0.0,
    }  # fmt: skip
    (run_dir / "result.json").write_text(json.dumps(result), encoding="utf-8")
    (run_dir / "process.json").write_text(json.dumps(record), encoding="utf-8")
    (run_dir / "attach.json").write_text(json.dumps({"signal": "SIGUSR1"}), encoding="utf-8")
    return run_dir


def still_running(proc: subprocess.Popen[bytes]) -> bool:
    """Whether ``proc`` is alive half a second on: a signal sent to it is delivered by then
    (the signal is queued before the sender returns; this only waits for its effect)."""
    try:
        proc.wait(timeout=0.5)
    except subprocess.TimeoutExpired:
        return True
    return False
