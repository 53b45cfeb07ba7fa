"""Launch → first breakpoint in the training loop: quickdev run --listen vs plain debugpy.

Both start the same script (examples/train_loop.py, no DataLoader workers, so the
comparison is about start-up, not about worker processes) and wait for a client; a
DAP client attaches with justMyCode off, sets a breakpoint on the training step and
times until it stops there. Runs alternate between the two ways, side by side, and
the medians are compared.

    python benchmarks/debug_start.py [--repeats N]

Prints the ratio quickdev / plain last (goal ≤ 0.8). This is a cold start, as from a
terminal; the ≤ 0.5 of docs/architecture.md is for the editor's debug runs, which start warm
(``benchmarks/warm.py``).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Run as a script, so the repository root (home of the tests package) is not on sys.path.
sys.path.insert(0, str(REPO))

from tests.support.dap import DapClient, wait_for_json_file  # noqa: E402

SCRIPT = REPO / "examples" / "train_loop.py"
TRAINING_STEP = "loss = loss_fn(model(inputs), targets)"
SCRIPT_ARGS = ["--num-workers", "0", "--epochs", "1"]


def step_line() -> int:
    for number, text in enumerate(SCRIPT.read_text(encoding="utf-8").splitlines(), start=1):
        if TRAINING_STEP in text:
            return number
    raise SystemExit(f"{SCRIPT} has no line {TRAINING_STEP!r}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def time_to_breakpoint(start: Callable[[Path], tuple[subprocess.Popen[bytes], str, int]]) -> float:
    """Seconds from launching the process to the stop at the training step."""
    with tempfile.TemporaryDirectory() as tmp:
        began = time.perf_counter()
        proc, host, port = start(Path(tmp))
        try:
            with DapClient.connect(host, port, timeout_s=120) as dap:
                dap.initialize()
                dap.attach(just_my_code=False)
                dap.set_breakpoints(SCRIPT, [step_line()])
                dap.configuration_done()
                dap.wait_for_stopped(timeout_s=120)
                elapsed = time.perf_counter() - began
                dap.disconnect(terminate=True)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=60)
    return elapsed


def start_quickdev(tmp: Path) -> tuple[subprocess.Popen[bytes], str, int]:
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "quickdev", "run", "--listen", "127.0.0.1:0",
            "--wait-for-client", "--runs-dir", str(tmp), "--run-id", "bench",
            "--sample-interval", "0", str(SCRIPT), "--", *SCRIPT_ARGS,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    address = wait_for_json_file(tmp / "bench" / "debugpy.json", timeout_s=120)
    return proc, str(address["host"]), int(address["port"])


def start_plain_debugpy(tmp: Path) -> tuple[subprocess.Popen[bytes], str, int]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "debugpy", "--listen", f"127.0.0.1:{port}",
            "--wait-for-client", str(SCRIPT), *SCRIPT_ARGS,
        ],
        cwd=tmp,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return proc, "127.0.0.1", port  # DapClient.connect retries until the adapter listens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # the same quiet start for both

    time_to_breakpoint(start_quickdev)  # warm the file cache for both
    quickdev, plain = [], []
    for _ in range(args.repeats):
        quickdev.append(time_to_breakpoint(start_quickdev))
        plain.append(time_to_breakpoint(start_plain_debugpy))
    q, p = statistics.median(quickdev), statistics.median(plain)
    for label, median, times in [
        ("quickdev run --listen", q, quickdev),
        ("python -m debugpy    ", p, plain),
    ]:
        runs = ", ".join(f"{t:.2f}" for t in times)
        print(f"{label} → first breakpoint: median {median:.2f} s  ({runs})")
    print(f"debug start ratio quickdev/plain (goal <= 0.8): {q / p:.2f}")


if __name__ == "__main__":
    main()
