"""The wall-clock deadline bounds the user's script, not the job's finishing after it: a
script that returns just before its ``--timeout`` passes, its files restored and its
memory forecast made, however long that finishing takes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from quickdev.job.hard_stop import Ending
from quickdev.job.signals import HARD_STOP_GRACE_S

# One training step of a deep, narrow model, then it waits until its end time: the
# memory forecast replays that step, about 10 ms a layer (fake tensors), which is the
# slow finishing. It overwrites the user's own checkpoint, which the job puts back.
SCRIPT = """\
import sys, time

print(f"script started at {time.time()}", flush=True)
import torch
from torch import nn

layers, end_at = int(sys.argv[1]), float(sys.argv[2])
model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(layers)])
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
model(torch.randn(8, 4)).sum().backward()
optimizer.step()
torch.save(model.state_dict(), "checkpoint.pt")
while time.time() < end_at:
    time.sleep(0.05)
print(f"script returned at {time.time()}", flush=True)
"""
TIMEOUT_S = 15
LAYERS = 2000


def test_a_script_that_returns_before_its_timeout_passes_however_long_the_finishing(
    tmp_path: Path,
) -> None:
    # The finishing must go on past the hard stop's time, or this test proves nothing;
    # how long a layer's forecast takes depends on the host: more layers where it was
    # too quick.
    for layers in (LAYERS, 2 * LAYERS, 4 * LAYERS):
        finishing_s = _returns_before_its_timeout(tmp_path / str(layers), layers)
        if finishing_s > HARD_STOP_GRACE_S + 1:
            return
    pytest.fail(f"the finishing took {finishing_s:.1f} s: no longer than the hard stop's grace")


def _returns_before_its_timeout(folder: Path, layers: int) -> float:
    """Runs the script; checks the job passed, its forecast made and the user's file
    back; returns how long the job went on after the script's deadline."""
    project = folder / "project"
    project.mkdir(parents=True)
    (project / "deep.py").write_text(SCRIPT)
    checkpoint = project / "checkpoint.pt"
    checkpoint.write_bytes(b"the user's own checkpoint")
    launched = time.time()
    # The job's wall clock starts after this launch, so the script returns at least
    # 3 s before its deadline.
    end_at = launched + TIMEOUT_S - 3
    options = ["--json", "--runs-dir", str(folder / "runs"), "--timeout", str(TIMEOUT_S)]
    script = ["deep.py", "--", str(layers), str(end_at)]
    proc = subprocess.run(
        [sys.executable, "-m", "quickdev", "run", *options, "--memory-forecast", "24", *script],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    returned = time.time()
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (result["status"], result["stop_reason"]) == ("passed", "completed"), result
    said = [line.split(" at ") for line in proc.stdout.splitlines() if line.startswith("script ")]
    times = {what: float(when) for what, when in said}
    # The script's first line runs after the job's wall clock started: the deadline is
    # at most this late.
    deadline = times["script started"] + TIMEOUT_S
    assert times["script returned"] < deadline, times
    assert result["memory_forecast"]["error"] is None, result["memory_forecast"]
    assert result["memory_forecast"]["peak"] > 0
    assert checkpoint.read_bytes() == b"the user's own checkpoint"
    return returned - deadline


def test_a_hard_stop_after_the_script_ended_does_nothing() -> None:
    ending = Ending()
    ending.script_ended()
    stopped: list[bool] = []
    ending.hard_stop(lambda: stopped.append(True))
    assert stopped == []


def test_the_script_ending_during_a_hard_stop_waits_and_never_finishes_beside_it() -> None:
    """The hard stop's own thread ends the process (os._exit); in this test it returns, so
    the main thread's wait ends and shows that it waited for the whole of it."""
    ending = Ending()
    in_stop, release = threading.Event(), threading.Event()
    events: list[str] = []

    def stop() -> None:
        in_stop.set()
        release.wait(30)
        events.append("hard stop done")

    stopper = threading.Thread(target=ending.hard_stop, args=(stop,))
    stopper.start()
    assert in_stop.wait(30)
    finisher = threading.Thread(target=lambda: (ending.script_ended(), events.append("finish")))
    finisher.start()
    finisher.join(0.5)
    assert finisher.is_alive() and events == []  # not beside the hard stop
    release.set()
    stopper.join(30)
    finisher.join(30)
    assert events == ["hard stop done", "finish"]
