"""Two checks on a CUDA machine, each printed as figures a person can read in a log:

1. a CUDA script run unmodified (``tests/job/device_scripts/as_written.py``: "cuda",
   "cuda:3", autocast float16 + GradScaler, a checkpoint saved on cuda:1): its status, the
   devices and dtypes it printed, and result.json's ``device``;
2. ``quickdev run --profile`` of ``examples/train_loop.py``: the kernels in its trace, and
   TensorBoard's profiler plugin over HTTP: its views and the GPU Kernel view's rows.

The assertions live in the tests (tests/job/test_device.py, tests/tensorboard/); this
prints what they check. Exit status 1 when a check fails.

    python tools/gpu/gpu_checks.py
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "python_backend")]

from quickdev.tensorboard.manager import ensure_tensorboard, stop_tensorboard  # noqa: E402

from tests.support.checkpoints import save_as_if_on  # noqa: E402
from tests.support.tensorboard import PLUGIN, get_json, listed_runs  # noqa: E402

SCRIPT = REPO / "tests" / "job" / "device_scripts" / "as_written.py"
EXAMPLE = REPO / "examples" / "train_loop.py"


def first_run(server: Any, timeout_s: float = 60) -> str:
    deadline = time.monotonic() + timeout_s
    while not (runs := listed_runs(server)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"TensorBoard listed no run in {timeout_s:.0f} s")
        time.sleep(0.2)
    return runs[0]


def quickdev(
    *args: str, cwd: Path
) -> tuple[dict[str, Any] | None, subprocess.CompletedProcess[str]]:
    command = [sys.executable, "-m", "quickdev", "run", "--json", *args]
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=240)
    lines = proc.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    return result, proc


def cuda_script(folder: Path) -> bool:
    import torch
    from torch import nn

    shutil.copy(SCRIPT, folder / SCRIPT.name)
    checkpoint = save_as_if_on(
        {"layer": nn.Linear(32, 64).state_dict()}, folder / "layer.pt", "cuda:1"
    )
    result, proc = quickdev("--max-steps", "2", SCRIPT.name, "--", str(checkpoint), cwd=folder)
    printed = [ln for ln in proc.stdout.splitlines() if ln.startswith(("DEVICES", "DTYPES"))]
    print(f"cuda script: exit {proc.returncode}, status {result and result['status']}")
    for line in printed:
        print(f"  {line}")
    if result is None:
        print("  no result:", proc.stderr.strip()[-1500:])
        return False
    print(f"  result.json device: {json.dumps(result['device'])}")
    if result.get("error"):
        print(f"  error: {result['error'].get('type')}: {result['error'].get('message')}")
    gpus = torch.cuda.device_count()
    wanted = [
        f"DEVICES cuda:0 {'cuda:3' if gpus > 3 else 'cuda:0'} {'cuda:1' if gpus > 1 else 'cuda:0'}",
        "DTYPES torch.float16 torch.float32",
    ]
    ok = (
        result["status"] == "passed"
        and printed == wanted
        and result["device"]["actual"] == "cuda:0"
        and not result["device"]["autocast"]
    )
    print(f"  {'ok' if ok else 'FAIL'}: wanted {wanted}, devices as written")
    return ok


def trace_events(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    events: list[dict[str, Any]] = json.loads(data)["traceEvents"]
    return events


def profile(folder: Path) -> bool:
    runs = folder / "runs"
    result, proc = quickdev(
        "--profile", "--runs-dir", str(runs), "--name", "gpu-profile", str(EXAMPLE), cwd=folder
    )
    print(f"profile: exit {proc.returncode}, status {result and result['status']}")
    if result is None:
        print("  no result:", proc.stderr.strip()[-1500:])
        return False
    for line in proc.stderr.splitlines():  # the terminal summary's own lines about it
        words = line.strip().lower()
        if words.startswith(("quickdev:", "device:", "profile", "trace", "problem", "error")):
            print(f"  summary: {line.strip()}")
    traces = [Path(t) for t in (result.get("profile") or {}).get("trace_files", [])]
    if not traces:
        print(f"  FAIL: no trace written; problems: {result.get('problems')}")
        log = Path(result.get("run_dir", runs)) / "job.log"
        errors = (
            [ln for ln in log.read_text().splitlines() if "ERROR" in ln] if log.exists() else []
        )
        print("  job.log:", *errors[:5], sep="\n    ")
        return False
    run_dir = Path(result["run_dir"])
    trace = traces[0] if traces[0].is_absolute() else run_dir / traces[0]
    events = trace_events(trace)
    kinds = Counter(str(e.get("cat", "")) for e in events)
    kernels = Counter(e["name"] for e in events if e.get("cat") == "kernel")
    print(
        f"  trace {trace.name}: {len(events)} events, {kinds.get('kernel', 0)} kernel launches "
        f"({len(kernels)} kernels), {kinds.get('gpu_memcpy', 0)} copies, "
        f"{kinds.get('cuda_runtime', 0)} runtime calls"
    )
    for name, count in kernels.most_common(3):
        print(f"    {count} x {name[:100]}")
    ok = bool(kernels)
    server = ensure_tensorboard(runs)
    try:
        run = first_run(server)
        views = get_json(f"{server.url}{PLUGIN}views?" + urlencode({"run": run}))
        print(f"  TensorBoard {server.url} run {run}: views {views}")
        if "Kernel" not in views:
            print("  FAIL: no GPU Kernel view")
            return False
        (worker, *_) = get_json(
            f"{server.url}{PLUGIN}workers?" + urlencode({"run": run, "view": "Kernel"})
        )
        (span, *_) = get_json(
            f"{server.url}{PLUGIN}spans?" + urlencode({"run": run, "worker": worker})
        )
        query = {"run": run, "worker": worker, "span": span, "group_by": "Kernel"}
        table = get_json(f"{server.url}{PLUGIN}kernel/table?" + urlencode(query))
        rows = table["data"]["rows"]
        print(f"  GPU Kernel view: {len(rows)} rows; first: {rows[0][:4] if rows else None}")
        ok = ok and bool(rows)
    finally:
        stop_tensorboard(runs)
    print(f"  {'ok' if ok else 'FAIL'}: kernels in the trace and in the GPU Kernel view")
    return ok


def main() -> int:
    import torch

    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device"
    print(f"gpu checks on {name}, torch {torch.__version__}, python {sys.version.split()[0]}")
    results = []
    with tempfile.TemporaryDirectory(prefix="gpu-checks-") as folder:
        for check in (cuda_script, profile):
            place = Path(folder) / check.__name__
            place.mkdir()
            try:
                results.append(check(place))
            except Exception as exc:  # one check's crash must not hide the other's figures
                print(f"{check.__name__}: FAIL, {type(exc).__name__}: {exc}")
                results.append(False)
    print(f"gpu checks: {sum(results)}/{len(results)} ok")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
