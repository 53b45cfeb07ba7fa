"""A CUDA-autocast (float16) training step stood in on this CPU, against the same step in
float32 under plain python, measured side by side in one run.

``benchmarks/workloads/gpt_autocast.py`` is a GPT-style model written for a GPU (``cuda``
device, ``autocast("cuda", float16)``, GradScaler). ``quickdev run`` runs it as written; the
plain variant runs it with ``--device cpu --dtype float32`` (a plain float32 step, as nanoGPT
does on a CPU). Each variant prints its steps' times; the first step of each run is left
out (it sets up kernels, and in the quick-dev run measures, once per machine, which dtype
is fast here: the cache starts empty, as on a new machine). Runs alternate; the medians of
the step times are compared. Goal: quick-dev / plain float32 <= 1.1.

Both variants run on one thread (OMP_NUM_THREADS=1): on a shared machine OpenMP's spinning
threads make a step several times slower and wildly variable (2.5 to 7 s for a step that
takes 0.35 s on one thread here), which would measure the neighbours, not the dtype.

    python benchmarks/autocast.py [--repeat N] [--steps N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

WORKLOAD = Path(__file__).resolve().parent / "workloads" / "gpt_autocast.py"
STEP = re.compile(r"^step (\d+): ([0-9.]+) s")


def step_times(command: list[str], env: dict[str, str]) -> tuple[list[float], str]:
    """The times of every step after the first, and the run's stdout."""
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        failed = f"benchmark command failed ({proc.returncode}): {' '.join(command)}"
        sys.exit(f"{failed}\n{proc.stderr}")
    times = [float(m.group(2)) for line in proc.stdout.splitlines() if (m := STEP.match(line))]
    if len(times) < 2:
        sys.exit(f"{' '.join(command)} printed {len(times)} step times:\n{proc.stdout}")
    return times[1:], proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each variant")
    parser.add_argument("--steps", type=int, default=5, help="steps per run")
    args = parser.parse_args()
    steps = str(args.steps)
    with tempfile.TemporaryDirectory(prefix="quickdev-bench-") as tmp:
        env = {**os.environ, "XDG_CACHE_HOME": str(Path(tmp) / "cache"), "OMP_NUM_THREADS": "1"}
        runs = str(Path(tmp) / "runs")
        commands = {
            "plain float32": [
                sys.executable, str(WORKLOAD), "--device", "cpu", "--dtype", "float32",
                "--steps", steps,
            ],
            "quickdev, autocast cuda float16": [
                sys.executable, "-m", "quickdev", "run", "--json", "--runs-dir", runs,
                "--max-steps", steps, str(WORKLOAD), "--", "--steps", steps,
            ],
        }  # fmt: skip
        times: dict[str, list[float]] = {name: [] for name in commands}
        choice = "?"
        names = list(commands)
        for rep in range(args.repeat):
            for name in names[rep % 2 :] + names[: rep % 2]:
                measured, stdout = step_times(commands[name], env)
                times[name].extend(measured)
                if name.startswith("quickdev"):
                    result = json.loads(stdout.strip().splitlines()[-1])
                    choice = "; ".join(
                        f"{c['asked']} ran in {c['ran']}: {c['why']}"
                        for c in result["device"]["autocast"]
                    )
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        spread = ", ".join(f"{v:.2f}" for v in values)
        print(f"{name:32s} step median {medians[name]:.3f} s ({spread})")
    print(f"the job chose: {choice}")
    ratio = medians["quickdev, autocast cuda float16"] / medians["plain float32"]
    print(f"autocast step, quickdev / plain float32: {ratio:.3f} (goal <= 1.1)")


if __name__ == "__main__":
    main()
