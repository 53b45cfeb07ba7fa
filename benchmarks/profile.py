"""Profiling cost and the time until TensorBoard's profiler shows a run.

Side by side in one run, on examples/train_loop.py:

* profiled / unprofiled quick-dev wall time (``quickdev run --profile`` vs ``quickdev
  run``, alternating, medians; goal ≤ 1.1, docs/architecture.md);
* the size of the trace the default schedule writes;
* seconds from starting TensorBoard (through our manager) to the plugin's overview
  answering for that run (goal ≤ 1.5 s).

    python benchmarks/profile.py [--repeats N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from quickdev.tensorboard.manager import ensure_tensorboard, stop_tensorboard

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "examples" / "train_loop.py"
PLUGIN = "data/plugin/pytorch_profiler/"


def quickdev_run(runs_dir: Path, profile: bool) -> tuple[float, float, dict[str, Any]]:
    """Wall and CPU seconds of one quick-dev job, and its result.

    CPU time is printed beside wall time because it is far less disturbed by other
    work on a shared machine.
    """
    cmd = [sys.executable, "-m", "quickdev", "run", "--runs-dir", str(runs_dir), "--json"]
    if profile:
        cmd.append("--profile")
    cpu_before = _children_cpu()
    began = time.perf_counter()
    proc = subprocess.run([*cmd, str(SCRIPT)], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - began
    cpu = _children_cpu() - cpu_before
    return wall, cpu, json.loads(proc.stdout.strip().splitlines()[-1])


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def answer(url: str) -> Any | None:
    """The JSON at ``url``, or None while it is not there yet."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            body = r.read()
            if r.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            return json.loads(body)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def seconds_to_overview(logdir: Path, run: str) -> float:
    """From asking for a server to the plugin's overview of ``run`` answering."""
    began = time.perf_counter()
    server = ensure_tensorboard(logdir)
    base = server.url + PLUGIN
    try:
        deadline = began + 120
        while time.perf_counter() < deadline:
            runs = answer(base + "runs")
            workers = answer(base + "workers?" + urlencode({"run": run, "view": "Overview"}))
            if runs and run in runs["runs"] and workers:
                spans = answer(base + "spans?" + urlencode({"run": run, "worker": workers[0]}))
                q = {"run": run, "worker": workers[0], "span": (spans or [""])[0]}
                overview = answer(base + "overview?" + urlencode(q))
                if overview and overview.get("steps"):
                    return time.perf_counter() - began
            time.sleep(0.02)
        raise SystemExit(f"the overview of {run} did not answer within 120 s")
    finally:
        stop_tensorboard(logdir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        runs_dir = Path(tmp) / "runs"
        quickdev_run(runs_dir, profile=False)  # warm the file cache for both
        plain, profiled, plain_cpu, profiled_cpu = [], [], [], []
        result: dict[str, Any] = {}
        for _ in range(args.repeats):
            wall, cpu, _result = quickdev_run(runs_dir, profile=False)
            plain.append(wall)
            plain_cpu.append(cpu)
            wall, cpu, result = quickdev_run(runs_dir, profile=True)
            profiled.append(wall)
            profiled_cpu.append(cpu)

        run_dir = runs_dir / result["id"]
        traces = [run_dir / name for name in result["profile"]["trace_files"]]
        packed = sum(p.stat().st_size for p in traces)
        unpacked = sum(len(gzip.decompress(p.read_bytes())) for p in traces)

        starts = []
        for i in range(args.repeats):
            logdir = Path(tmp) / f"served{i}"
            shutil.copytree(run_dir, logdir / run_dir.name)
            starts.append(seconds_to_overview(logdir, run_dir.name))

    ratio = statistics.median(profiled) / statistics.median(plain)
    n = args.repeats
    med = statistics.median
    for label, walls, cpus in (
        ("unprofiled", plain, plain_cpu),
        ("profiled", profiled, profiled_cpu),
    ):
        print(f"quick-dev {label} (median of {n}): {med(walls):.2f} s wall, {med(cpus):.2f} s CPU")
    print(f"profiled / unprofiled CPU time: {med(profiled_cpu) / med(plain_cpu):.2f}")
    kib = packed / 1024, unpacked / 1024
    print(f"trace of the default schedule: {kib[0]:.0f} KiB gzip, {kib[1]:.0f} KiB raw")
    start_s = statistics.median(starts)
    print(f"TensorBoard start -> overview answering (median of {n}): {start_s:.2f} s (goal <= 1.5)")
    print(f"profiled / unprofiled wall: {ratio:.2f} (goal <= 1.1)")


if __name__ == "__main__":
    main()
