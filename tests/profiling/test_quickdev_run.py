"""End to end: ``quickdev run --profile`` on the bundled examples, as a user runs it."""

from __future__ import annotations

import gzip
import json
import pstats
import subprocess
import sys
from pathlib import Path
from typing import Any

from quickdev.profiling.call_sites import FRAME
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.support.paths import EXAMPLES


def quickdev_run(runs_dir: Path, script: str, *options: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "quickdev", "run", *options),
            *("--runs-dir", str(runs_dir), "--json", str(EXAMPLES / script)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.stdout.strip(), proc.stderr[-2000:]
    return proc.returncode, json.loads(proc.stdout.strip().splitlines()[-1])


def run_dir_of(runs_dir: Path, result: dict[str, Any]) -> Path:
    return Path(result["run_dir"]) if result.get("run_dir") else runs_dir / result["id"]


def trace_event_names(path: Path) -> set[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return {e.get("name", "") for e in json.load(f)["traceEvents"]}


def test_profiled_training_loop(tmp_path: Path) -> None:
    code, result = quickdev_run(tmp_path, "train_loop.py", "--profile", "--py-profile")
    assert code == 0, result
    run_dir = run_dir_of(tmp_path, result)
    profile = result["profile"]
    (trace_name,) = profile["trace_files"]
    assert trace_name.endswith(".pt.trace.json.gz")
    names = trace_event_names(run_dir / trace_name)
    assert "ProfilerStep#1" in names  # the second optimizer step, after one warmup step
    assert "aten::addmm" in names
    assert "aten::addmm" in [op["name"] for op in profile["top_ops"]]
    assert 0.0 <= profile["data_wait_share"] <= 1.0

    stats = pstats.Stats(str(run_dir / profile["py_profile"]))
    files = {file for (file, _line, _func) in stats.stats}  # type: ignore[attr-defined]
    assert any(f.endswith("train_loop.py") for f in files)

    # Every file a stack frame names can be found from the roots the job recorded.
    roots = json.loads((run_dir / "source_roots.json").read_text())["roots"]
    with gzip.open(run_dir / trace_name, "rt", encoding="utf-8") as f:
        frames = [
            e["name"] for e in json.load(f)["traceEvents"] if e.get("cat") == "python_function"
        ]
    frame_files = {
        m.group(1) for m in map(FRAME.match, frames) if m and not m.group(1).startswith("<")
    }
    assert "train_loop.py" in frame_files
    assert not [f for f in frame_files if f.startswith("quickdev/")]  # our wrappers are hidden
    for file in frame_files:
        assert any((Path(root) / file).is_file() for root in roots), file

    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    assert "system/cpu_percent" in acc.Tags()["scalars"]


def test_profiled_lightning_module_steps_with_lightning(tmp_path: Path) -> None:
    code, result = quickdev_run(tmp_path, "lightning_module.py", "--profile")
    assert code == 0, result
    (trace_name,) = result["profile"]["trace_files"]
    names = trace_event_names(run_dir_of(tmp_path, result) / trace_name)
    assert "ProfilerStep#1" in names
    assert "aten::addmm" in names or "aten::mm" in names


def test_crashing_script_still_leaves_a_trace_and_no_false_advice(tmp_path: Path) -> None:
    code, result = quickdev_run(tmp_path, "crash_deep.py", "--profile")
    assert code == 1
    assert result["status"] == "failed"
    profile = result["profile"]
    (trace_name,) = profile["trace_files"]
    assert (run_dir_of(tmp_path, result) / trace_name).stat().st_size > 0
    assert profile["advice"] is None


def test_unprofiled_run_has_scalars_but_no_trace(tmp_path: Path) -> None:
    code, result = quickdev_run(tmp_path, "train_loop.py")
    assert code == 0, result
    run_dir = run_dir_of(tmp_path, result)
    assert result["profile"] is None
    assert not list(run_dir.glob("*.pt.trace.json*"))
    assert list(run_dir.glob("events.out.tfevents.*.quickdev"))


def test_py_profile_alone_writes_cprofile_stats_and_no_trace(tmp_path: Path) -> None:
    code, result = quickdev_run(tmp_path, "train_loop.py", "--py-profile")
    assert code == 0, result
    run_dir = run_dir_of(tmp_path, result)
    profile = result["profile"]
    assert profile["trace_files"] == []
    assert not list(run_dir.glob("*.pt.trace.json*"))
    stats = pstats.Stats(str(run_dir / profile["py_profile"]))
    files = {file for (file, _line, _func) in stats.stats}  # type: ignore[attr-defined]
    assert any(f.endswith("train_loop.py") for f in files)


def test_trace_shows_the_users_frames_without_quickdevs(tmp_path: Path) -> None:
    """The job's wrappers (loader and step limits, observers, the sampler thread) leave
    no frame in the trace; the user's lines are there and each frame's parent is kept."""
    code, result = quickdev_run(tmp_path, "train_loop.py", "--profile")
    assert code == 0, result
    (trace_name,) = result["profile"]["trace_files"]
    with gzip.open(run_dir_of(tmp_path, result) / trace_name, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    frames = [e for e in events if e.get("cat") == "python_function"]
    assert not [e["name"] for e in frames if "quickdev" in e["name"]]
    by_id = {e["args"]["Python id"]: e for e in frames}
    loop = [
        e
        for e in frames
        if e["name"].startswith("train_loop.py(") and "train_one_epoch" in e["name"]
    ]
    assert loop, "the user's training loop frame is missing"
    # The operators of loss.backward() (reached through our wrapper of it) are still
    # there, inside the user's loop frame's time.
    # The function's own frame, and frames for the lines the job saw run its calls.
    outer = max(loop, key=lambda e: e["dur"])
    end = outer["ts"] + outer["dur"]
    assert any(
        e.get("cat") == "cpu_op" and "Backward" in e["name"] and outer["ts"] <= e["ts"] <= end
        for e in events
    )
    # What our wrapper of backward() calls is what the user called: torch's own backward,
    # straight under the user's loss.backward() line, in the function's frame.
    backward_line = next(
        i
        for i, text in enumerate((EXAMPLES / "train_loop.py").read_text().splitlines(), 1)
        if "loss.backward()" in text
    )
    assert any(
        e["name"].startswith("torch/_tensor.py(")
        and e["name"].endswith(": backward")
        and by_id[e["args"]["Python parent id"]]["name"]
        == f"train_loop.py({backward_line}): train_one_epoch"
        and by_id.get(by_id[e["args"]["Python parent id"]]["args"]["Python parent id"]) is outer
        for e in frames
    )
    for e in frames:
        parent = e["args"].get("Python parent id")
        assert parent is None or parent in by_id, e["name"]
    # One thread of Python frames: the resource sampler's thread is ours.
    assert len({(e["pid"], e["tid"]) for e in frames}) == 1
