"""What the NaN hunt costs per training step, and what it leaves in the default job, measured
side by side in one run.

Per-step times come from two runs of each variant that differ only in their step count
(``--max-steps`` / the workload's ``--steps``): the difference divided by the extra steps,
so the interpreter's start and the imports cancel out. Variants, on each workload:

- ``plain``: the workload under plain ``python``;
- ``default``: ``quickdev run`` as a user runs it (its limits, no hunt);
- ``hunt``: ``quickdev run --find-nonfinite``.

Workloads: ``small_ops.py`` (a deep, narrow MLP: the worst case for a cost on every torch
call) and ``gpt_steps.py`` (a small nanoGPT-style model fed by a DataLoader: a typical step).
Repetitions are interleaved; medians of CPU time (less disturbed on a busy machine than wall
time, which is printed beside it). The last line holds the figures:

- hunt / default per step: what hunting costs; on the nanoGPT-style model the goal is
  <= 1.5 (``HUNT_GOAL``; the tiny-tensor MLP has none beyond "say how much");
- default / plain per step: the default job's cost per step, whose only share of the hunt is
  a test of ``recorder.nonfinite`` per batch and per backward (goal: the same as before, the
  design document's <= 1.05 with its per-step hooks).

    python benchmarks/nonfinite.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from precompiled import compile_quickdev

WORKLOADS = Path(__file__).resolve().parent / "workloads"
# (few, many) steps per workload: the difference is what is measured.
STEPS = {"small_ops": (50, 550), "gpt_steps": (10, 60)}
# The goal of hunt / default per step on the nanoGPT-style model.
HUNT_GOAL = 1.5


def command(variant: str, workload: str, steps: int, runs_dir: Path) -> list[str]:
    script = str(WORKLOADS / f"{workload}.py")
    if variant == "plain":
        return [sys.executable, script, "--steps", str(steps)]
    quickdev = [sys.executable, "-m", "quickdev", "run", "--runs-dir", str(runs_dir)]
    # As many batches per pass as steps: the default job would otherwise end its pass at 2.
    limits = ["--max-steps", str(steps), "--batches", str(steps), "--timeout", "0"]
    hunt = ["--find-nonfinite"] if variant == "hunt" else []
    return [*quickdev, *limits, *hunt, script, "--steps", str(steps + 1)]


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(argv: list[str], cwd: Path) -> tuple[float, float]:
    cpu_before = _children_cpu_s()
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"benchmark command failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr}")
    return wall, _children_cpu_s() - cpu_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of each variant")
    args = parser.parse_args()
    compile_quickdev()
    # One thread each: on a shared machine torch's spinning threads swamp what is measured.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    keys = [(w, v) for w in STEPS for v in ("plain", "default", "hunt")]
    samples: dict[tuple[str, str], list[tuple[float, float]]] = {key: [] for key in keys}
    with tempfile.TemporaryDirectory(prefix="quickdev-bench-") as tmp:
        cwd = Path(tmp)
        for rep in range(args.repeat):
            for workload, variant in keys[rep % len(keys) :] + keys[: rep % len(keys)]:
                few, many = STEPS[workload]
                wall_few, cpu_few = measure(command(variant, workload, few, cwd / "runs"), cwd)
                wall_many, cpu_many = measure(command(variant, workload, many, cwd / "runs"), cwd)
                extra = many - few
                samples[(workload, variant)].append(
                    ((wall_many - wall_few) / extra, (cpu_many - cpu_few) / extra)
                )
    per_step = {key: statistics.median(cpu for _, cpu in values) for key, values in samples.items()}
    for (workload, variant), values in samples.items():
        walls = ", ".join(f"{1000 * wall:.1f}" for wall, _ in values)
        cpu_ms = 1000 * per_step[(workload, variant)]
        print(f"{workload:10s} {variant:8s} CPU per step {cpu_ms:.2f} ms (wall: {walls} ms)")
    figures = []
    for workload in STEPS:
        hunt = per_step[(workload, "hunt")] / per_step[(workload, "default")]
        default = per_step[(workload, "default")] / per_step[(workload, "plain")]
        print(f"{workload}: hunt / default {hunt:.2f}, default / plain {default:.3f}")
        goal = f" (goal <= {HUNT_GOAL})" if workload == "gpt_steps" else ""
        figures.append(f"{workload} hunt/default {hunt:.2f}{goal}, default/plain {default:.3f}")
    print("NaN hunt per step: " + "; ".join(figures))


if __name__ == "__main__":
    main()
