"""Overhead of a quick-dev job, measured side by side in one run.

1. ``quickdev run examples/train_loop.py`` against the same script limited by hand
   to the same batches and one epoch (``--limit-batches 2 --epochs 1``, no workers)
   under plain ``python``
   (goal: ratio <= 1.05, docs/architecture.md).
2. ``quickdev run --max-steps 300 benchmarks/workloads/small_ops.py`` against the same script
   stopping itself after 300 steps: a model of many small ops, where a cost on every
   torch call (the device engine's mode) would show (goal: ratio <= 1.05).
3. ``quickdev run examples/lightning_module.py`` against Lightning's own
   ``fast_dev_run=2`` on the same module (goal: ratio <= 0.9).

Repetitions are interleaved (so drifting machine load hits every variant alike)
and medians of wall-clock time are compared; CPU time is printed beside them,
as it is less disturbed by other work on a busy machine. The last line holds both
ratios.

    python benchmarks/overhead.py [--repeat N]

What the file journal adds (keeping the user's files intact) is measured on its own
by ``benchmarks/journal.py``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from precompiled import compile_quickdev

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BATCHES = "2"
SMALL_OPS_STEPS = "300"


def variants(runs_dir: Path) -> dict[str, list[str]]:
    python = sys.executable
    quickdev = [python, "-m", "quickdev", "run", "--batches", BATCHES, "--runs-dir", str(runs_dir)]
    train_loop = str(EXAMPLES / "train_loop.py")
    lightning = str(EXAMPLES / "lightning_module.py")
    # Its own folder: benchmarks/profile.py would shadow the standard library module.
    small_ops = str(Path(__file__).resolve().parent / "workloads" / "small_ops.py")
    return {
        "plain, limited by hand": [
            python, train_loop, "--num-workers", "0", "--limit-batches", BATCHES, "--epochs", "1",
        ],
        # One epoch each: quick-dev sets the script's --epochs to 1 by itself.
        "quickdev": [*quickdev, train_loop],
        "small ops, plain": [python, small_ops, "--steps", SMALL_OPS_STEPS],
        "small ops, quickdev": [*quickdev, "--max-steps", SMALL_OPS_STEPS, small_ops],
        "lightning fast_dev_run": [
            python, lightning, "--num-workers", "0", "--fast-dev-run", BATCHES,
        ],
        "quickdev lightning": [*quickdev, lightning],
    }  # fmt: skip


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one run of ``command``."""
    cpu_before = _children_cpu_s()
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(
            f"benchmark command failed ({proc.returncode}): {' '.join(command)}\n{proc.stderr}"
        )
    return elapsed, _children_cpu_s() - cpu_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="repetitions of each variant")
    args = parser.parse_args()
    compile_quickdev()

    with tempfile.TemporaryDirectory(prefix="quickdev-bench-") as tmp:
        cwd = Path(tmp)
        commands = variants(cwd / "runs")
        times: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        names = list(commands)
        for name in names:  # warm the file cache once; not measured
            measure(commands[name], cwd)
        for rep in range(args.repeat):
            # Rotate the order so no variant always runs right after the same one.
            for name in names[rep % len(names) :] + names[: rep % len(names)]:
                wall_s, cpu_s = measure(commands[name], cwd)
                times[name].append(wall_s)
                cpu[name].append(cpu_s)

    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        spread = ", ".join(f"{v:.2f}" for v in values)
        print(
            f"{name:24s} wall median {medians[name]:.2f} s ({spread}); "
            f"CPU median {statistics.median(cpu[name]):.2f} s"
        )
    cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
    for label, (quick, base) in {
        "plain": ("quickdev", "plain, limited by hand"),
        "small ops": ("small ops, quickdev", "small ops, plain"),
        "fast_dev_run": ("quickdev lightning", "lightning fast_dev_run"),
    }.items():
        print(f"CPU-time ratio, {label}: {cpu_medians[quick] / cpu_medians[base]:.3f}")
    plain_ratio = medians["quickdev"] / medians["plain, limited by hand"]
    small_ops_ratio = medians["small ops, quickdev"] / medians["small ops, plain"]
    lightning_ratio = medians["quickdev lightning"] / medians["lightning fast_dev_run"]
    print(f"quickdev / plain python limited by hand: {plain_ratio:.3f} (goal <= 1.05)")
    print(f"quickdev / plain, many small ops: {small_ops_ratio:.3f} (goal <= 1.05)")
    print(f"quickdev / Lightning fast_dev_run: {lightning_ratio:.3f} (goal <= 0.9)")
    print(
        f"overhead ratios: plain {plain_ratio:.3f} (goal <= 1.05), "
        f"small ops {small_ops_ratio:.3f} (goal <= 1.05), "
        f"fast_dev_run {lightning_ratio:.3f} (goal <= 0.9)"
    )


if __name__ == "__main__":
    main()
