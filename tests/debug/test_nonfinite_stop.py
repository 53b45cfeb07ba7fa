"""A NaN hunt under the debugger stops in the user's frame whose operation made the first
NaN, with that frame's tensors in the Variables view: the real debugpy, over DAP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.dap import DapClient, wait_for_json_file
from tests.support.debug import line_of, quickdev_env
from tests.support.paths import REPO

SCRIPTS = REPO / "tests" / "limits" / "nonfinite" / "scripts"


def hunt_under_debugger(
    tmp_path: Path, processes: list, script: Path
) -> tuple[subprocess.Popen, DapClient]:
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "quickdev", "run", "--find-nonfinite",
            "--listen", "127.0.0.1:0", "--wait-for-client",
            "--runs-dir", str(runs), "--run-id", "r", str(script),
        ],
        cwd=tmp_path,
        env=quickdev_env(),
        stdout=(tmp_path / "job.out").open("wb"),
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    processes.append(proc)
    address = wait_for_json_file(runs / "r" / "debugpy.json", timeout_s=120)
    dap = DapClient.connect(address["host"], address["port"])
    dap.initialize()
    dap.attach(just_my_code=False)
    # Every exception filter off: the person asked for this stop by asking for the hunt.
    dap.request("setExceptionBreakpoints", {"filters": []})
    dap.configuration_done()
    return proc, dap


def end(tmp_path: Path, proc: subprocess.Popen, dap: DapClient, thread: int) -> dict:
    dap.continue_(thread)
    proc.wait(timeout=120)
    assert [e for e in dap.events if e.get("event") == "stopped"] == []
    dap.close()
    assert proc.returncode == 1, (tmp_path / "job.out").read_text(errors="replace")[-3000:]
    return json.loads((tmp_path / "runs" / "r" / "result.json").read_text())


def test_the_debugger_stops_where_the_first_nan_was_made(tmp_path: Path, processes: list) -> None:
    script = SCRIPTS / "zero_std_norm.py"
    division = line_of(script, "return (x - mean) / std")
    proc, dap = hunt_under_debugger(tmp_path, processes, script)
    stopped = dap.wait_for_stopped(timeout_s=180)
    assert stopped["reason"] == "exception", stopped
    thread = stopped["threadId"]
    frames = dap.stack_trace(thread)
    top = frames[0]
    assert Path(top["source"]["path"]) == script.resolve(), top
    assert (top["name"], top["line"]) == ("forward", division)
    # Its callers as they called it: the model's forward, then the training loop.
    names = [(f["name"], Path(f["source"]["path"]).name) for f in frames]
    assert ("main", script.name) in names, names
    info = dap.request("exceptionInfo", {"threadId": thread})
    assert "NaN from torch.Tensor.div" in info["description"], info

    # The tensors of that frame, as they were: the batch of the stuck sensor, its std 0.
    variables = dap.locals(top["id"])
    assert {"x", "mean", "std"} <= variables.keys(), variables.keys()
    assert variables["std"]["value"].startswith("f32[1, 6]"), variables["std"]
    assert dap.evaluate("float(std.abs().max())", top["id"]) == "0.0"
    assert dap.evaluate("x.shape[0]", top["id"]) == "32"
    result = end(tmp_path, proc, dap, thread)
    assert result["first_nonfinite"]["line"] == division


def test_a_nan_made_in_backward_stops_at_its_forward_line(tmp_path: Path, processes: list) -> None:
    """The backward of sqrt at 0: the stop is in the forward frame that called sqrt, held
    until the backward found it."""
    script = SCRIPTS / "sqrt_distance.py"
    proc, dap = hunt_under_debugger(tmp_path, processes, script)
    stopped = dap.wait_for_stopped(timeout_s=180)
    thread = stopped["threadId"]
    top = dap.stack_trace(thread)[0]
    assert (top["name"], top["line"]) == ("distance", line_of(script, "return torch.sqrt("))
    assert {"a", "b"} <= dap.locals(top["id"]).keys()
    assert dap.evaluate("float(((a - b) ** 2).sum(-1).min())", top["id"]) == "0.0"
    result = end(tmp_path, proc, dap, thread)
    assert result["first_nonfinite"]["phase"] == "backward"
