"""A debug job of a script whose loops carry exits (quickdev/limits/loops): breakpoints in
the loop are hit, stepping visits the user's lines only, and the loop that a budget ends
steps straight to the line after it, with none of Quickdev's frames in the call stack."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.debug.test_session_options import SESSION_OPTIONS
from tests.support.dap import DapClient, wait_for_json_file
from tests.support.debug import line_of, quickdev_env

SCRIPT = textwrap.dedent(
    """
    import torch

    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(1000):  # HEAD
        x = torch.randn(8, 4)  # BODY
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()  # STEP
    print("after the loop", step)  # AFTER
    """
)


def _where(dap: DapClient, thread: int) -> tuple[int, list[str]]:
    """The top frame's line, and the paths of every frame the editor would show."""
    frames = dap.stack_trace(thread)
    return frames[0]["line"], [f["source"]["path"] for f in frames if f.get("source")]


def test_breakpoints_and_stepping_in_a_loop_with_an_exit(tmp_path: Path, processes: list) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "quickdev", "run", "--listen", "127.0.0.1:0",
            "--wait-for-client", "--runs-dir", str(runs), "--run-id", "r", str(script),
        ],
        cwd=tmp_path,
        env=quickdev_env(),
        stdout=(tmp_path / "job.out").open("wb"),
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    processes.append(proc)
    address = wait_for_json_file(runs / "r" / "debugpy.json", timeout_s=120)
    head, body, step, after = (line_of(script, m) for m in ("HEAD", "BODY", "STEP", "AFTER"))
    visited: list[int] = []
    with DapClient.connect(address["host"], address["port"]) as dap:
        dap.initialize()
        dap.attach(just_my_code=False, **SESSION_OPTIONS)
        [breakpoint_] = dap.set_breakpoints(script, [body])
        assert breakpoint_["verified"]
        dap.configuration_done()

        # A breakpoint on the body of the rewritten loop is hit, in the user's file.
        stopped = dap.wait_for_stopped(timeout_s=120)
        assert stopped["reason"] == "breakpoint"
        thread = stopped["threadId"]
        line, paths = _where(dap, thread)
        assert (line, Path(paths[0])) == (body, script.resolve())

        # Stepping over goes line by line through the user's code: the head, the body's
        # first line, each line in turn and round to the head, no stop on the check.
        dap.set_breakpoints(script, [])
        for _ in range(7):
            dap.next_(thread)
            line, paths = _where(dap, thread)
            visited.append(line)
            assert not [p for p in paths if "/quickdev/" in Path(p).as_posix()], paths
        assert visited == [body + 1, body + 2, body + 3, step, head, body, body + 1]

        # Two steps are the loop-steps budget: the loop ends as it goes round again, so
        # stepping over its head lands on the line after it.
        while line != head:
            dap.next_(thread)
            line, paths = _where(dap, thread)
        dap.next_(thread)
        line, paths = _where(dap, thread)
        assert line == after
        assert not [p for p in paths if "/quickdev/" in Path(p).as_posix()], paths
        dap.continue_(thread)
        proc.wait(timeout=300)
    output = (tmp_path / "job.out").read_text(errors="replace")
    assert proc.returncode == 0, output[-3000:]
    assert "after the loop 2" in output
    result: dict[str, Any] = json.loads((runs / "r" / "result.json").read_text())
    assert (result["status"], result["optimizer_steps"]) == ("passed", 2)
    assert [(e["line"], e["role"]) for e in result["loops_ended"]] == [(head, "training")]
