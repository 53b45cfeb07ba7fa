"""Under the debugger, Step Into on ``model(x)`` lands in the model's ``forward`` in one
press (job/step_filter.py), the rest of torch stays steppable, and time held at a
breakpoint is not the run's duration (job/debug_pauses.py). The real debugpy, attached as
the editor attaches (its session rules)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.support.dap import DapClient, wait_for_json_file
from tests.support.debug import SESSION_OPTIONS, line_of, quickdev_env

SCRIPT = textwrap.dedent(
    """
    import torch
    import torch.nn.functional as F
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            h = self.fc(x)  # NET FORWARD
            return F.relu(h)  # RELU


    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.ones(3, 4)
    for step in range(2):
        out = model(x)  # CALL MODEL
        loss = out.sum()
        loss.backward()  # BACKWARD
        optimizer.step()
        optimizer.zero_grad()
    """
)


def start_debug_job(tmp_path: Path, processes: list) -> tuple[Path, Path, dict]:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "quickdev", "run", "--listen", "127.0.0.1:0",
            "--wait-for-client", "--runs-dir", str(runs), "--run-id", "r", str(script),
        ],
        cwd=tmp_path, env=quickdev_env(),
        stdout=(tmp_path / "job.out").open("wb"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    processes.append(proc)
    return script, runs / "r", wait_for_json_file(runs / "r" / "debugpy.json", timeout_s=120)


def where(dap: DapClient, thread_id: int) -> list[tuple[str, str, int]]:
    return [
        (f["name"], Path(f.get("source", {}).get("path", "")).as_posix(), f["line"])
        for f in dap.stack_trace(thread_id)
    ]


def test_step_into_a_module_call_lands_in_its_forward(tmp_path: Path, processes: list) -> None:
    script, _, address = start_debug_job(tmp_path, processes)
    with DapClient.connect(address["host"], address["port"]) as dap:
        dap.initialize()
        dap.attach(just_my_code=False, **SESSION_OPTIONS)
        dap.set_breakpoints(script, [line_of(script, "CALL MODEL")])
        dap.configuration_done()
        thread = dap.wait_for_stopped(timeout_s=120)["threadId"]

        # One press: in Net.forward, with nothing of torch's dispatch nor Quickdev's
        # hooks (the job watches the top module's forward) between it and the caller.
        dap.step_in(thread)
        stack = where(dap, thread)
        assert stack[0] == ("forward", script.as_posix(), line_of(script, "NET FORWARD")), stack
        assert [name for name, _, _ in stack] == ["forward", "<module>"], stack

        # A torch module's own forward is steppable, and so is the rest of torch.
        dap.step_in(thread)
        name, path, _ = where(dap, thread)[0]
        assert (name, path.endswith("torch/nn/modules/linear.py")) == ("forward", True), path
        dap.request("stepOut", {"threadId": thread})
        dap.wait_for_stopped()
        assert where(dap, thread)[0][2] == line_of(script, "NET FORWARD")
        dap.next_(thread)
        assert where(dap, thread)[0][2] == line_of(script, "RELU")
        dap.step_in(thread)
        name, path, _ = where(dap, thread)[0]
        assert (name, path.endswith("torch/nn/functional.py")) == ("relu", True)

        dap.set_breakpoints(script, [])
        dap.continue_(thread)
        processes[-1].wait(timeout=120)
    assert processes[-1].returncode == 0, (tmp_path / "job.out").read_text(errors="replace")


def test_time_held_at_a_breakpoint_is_not_the_runs_duration(
    tmp_path: Path, processes: list
) -> None:
    script, run_dir, address = start_debug_job(tmp_path, processes)
    with DapClient.connect(address["host"], address["port"]) as dap:
        dap.initialize()
        dap.attach(just_my_code=False, **SESSION_OPTIONS)
        dap.set_breakpoints(script, [line_of(script, "BACKWARD")])
        dap.configuration_done()
        thread = dap.wait_for_stopped(timeout_s=120)["threadId"]
        time.sleep(4)  # a person reading the variables
        dap.set_breakpoints(script, [])
        dap.continue_(thread)
        processes[-1].wait(timeout=120)
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] in ("passed", "stopped"), result
    assert 4 <= result["paused_s"] < 60, result["paused_s"]
    started = time.mktime(time.strptime(result["started"][:19], "%Y-%m-%dT%H:%M:%S"))
    assert result["duration_s"] < time.time() - started - 4
