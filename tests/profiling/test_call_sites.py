"""A profile shows the user's work at the lines that ran it: the job's own checks are out
of the trace, backward's operators sit under ``loss.backward()``, and no runpy frames top
the stacks (profiling/call_sites.py, limits/profiler_marks.py)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

SCRIPT = textwrap.dedent(
    """
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    data = TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,)))
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in DataLoader(data, batch_size=8):
            finite = torch.isfinite(x).all()  # USER CHECK
            loss = nn.functional.cross_entropy(model(x), y)  # FORWARD
            optimizer.zero_grad()
            loss.backward()  # BACKWARD
            optimizer.step()  # STEP
    """
)


def line_of(marker: str) -> int:
    return next(i for i, text in enumerate(SCRIPT.splitlines(), 1) if marker in text)


def profiled(tmp_path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [
            sys.executable, "-m", "quickdev", "run", "--profile", "--batches", "6",
            "--runs-dir", str(tmp_path / "runs"), "--json", str(script),
        ],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    (trace_file,) = result["profile"]["trace_files"]
    with gzip.open(Path(result["run_dir"]) / trace_file, "rt", encoding="utf-8") as f:
        return result, json.load(f)["traceEvents"]


def user_line(op: dict[str, Any], frames: list[dict[str, Any]]) -> int | None:
    """The line of the innermost train.py frame around an operator."""
    around = [
        f
        for f in frames
        if f["tid"] == op["tid"] and f["ts"] <= op["ts"] <= f["ts"] + f.get("dur", 0)
    ]
    mine = [f for f in around if f["name"].startswith("train.py(")]
    if not mine:
        return None
    innermost = max(mine, key=lambda f: f["ts"])
    return int(innermost["name"].split("(", 1)[1].split(")", 1)[0])


def test_the_trace_holds_the_users_work_at_the_lines_that_ran_it(tmp_path: Path) -> None:
    _, events = profiled(tmp_path)
    frames = [e for e in events if e.get("cat") == "python_function"]
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    assert ops and frames

    # The job checks every batch for NaN/Inf (isfinite, ne, all): none of it is in the
    # trace. The script's own isfinite is, one per batch recorded, under the script's
    # frame: a call the job does not see points at its function (the module's line 1),
    # never at the line the frame happened to be at when recording started.
    checks = [op for op in ops if op["name"] == "aten::isfinite"]
    batches = [op for op in ops if op["name"] == "aten::addmm"]
    assert checks and len(checks) == len(batches) // 2  # two Linear layers per forward
    assert {user_line(op, frames) for op in checks} <= {line_of("USER CHECK"), 1}
    assert not [e for e in events if str(e.get("name", "")).startswith("quickdev::")]

    # Backward's operators sit under the loss.backward() line, the forward's under the
    # model(x) line, the optimizer's under optimizer.step().
    backward = [op for op in ops if op["name"].startswith("autograd::engine::evaluate_function")]
    assert backward
    assert {user_line(op, frames) for op in backward} == {line_of("BACKWARD")}
    assert {user_line(op, frames) for op in batches} == {line_of("FORWARD")}
    steps = [op for op in ops if op["name"] == "aten::add_"]
    assert line_of("STEP") in {user_line(op, frames) for op in steps}

    # No runpy frames above the script's: a plain `python train.py` has none.
    assert not [f["name"] for f in frames if "runpy" in f["name"]]
