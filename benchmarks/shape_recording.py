"""What recording tensor shapes for the editor costs a quick-dev run (quickdev/limits/shapes).

Default-flag quick-dev runs of a CNN training script (two convolutions, a train batch of 64
and a test batch of 100, 28x28 images: 24 distinct activations with statistics) and of a
GPT training script with its model in a second file (eval before training, two blocks),
each with recording (the default) and with ``--no-shapes``, interleaved so load drift hits
both alike; wall and CPU (the job processes') medians and their ratios. Each variant runs
once first, so the rewritten code is cached as from a user's second run on. The jobs' logs
give what the looks themselves took. Goal: with / without <= 1.10.

The last line is the worst of the two ratios (wall; CPU beside it: the machine may be busy).

    python benchmarks/shape_recording.py [--repeat N]
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from precompiled import compile_quickdev

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE.parent / "tests" / "server" / "shape_scripts"
WORKLOADS = {"CNN (cnn/train.py)": "cnn", "GPT (gpt/train.py + model.py)": "gpt"}
GOAL = 1.10
_LOOKS = re.compile(r"tensor shapes: .*look\(s\) in ([\d.]+) ms \(CPU ([\d.]+) ms\)")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command: list[str], cwd: Path) -> tuple[float, float]:
    cpu_before = _children_cpu_s()
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-2000:]}")
    return wall, _children_cpu_s() - cpu_before


def workload(name: str, folder: Path, repeat: int) -> tuple[float, float]:
    runs = folder / "runs"
    base = [sys.executable, "-m", "quickdev", "run", "--runs-dir", str(runs)]
    variants = {"recording": [*base, "train.py"], "--no-shapes": [*base, "--no-shapes", "train.py"]}
    for command in variants.values():
        _timed(command, folder)  # the rewrite cache filled, as from a second run on
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
    for _ in range(repeat):
        for variant, command in variants.items():
            times[variant].append(_timed(command, folder))
    looks = [m.groups() for log in runs.glob("*/job.log") if (m := _LOOKS.search(log.read_text()))]
    wall = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
    print(f"{name}: {'wall s':>8} {'CPU s':>8}")
    for variant in variants:
        print(f"  {variant:22} {wall[variant]:8.2f} {cpu[variant]:8.2f}")
    if looks:
        look_wall = statistics.median(float(w) for w, _ in looks)
        look_cpu = statistics.median(float(c) for _, c in looks)
        print(
            f"  the looks themselves (job.log): median {look_wall:.0f} ms wall,"
            f" {look_cpu:.0f} ms CPU a run"
        )
    ratio = wall["recording"] / wall["--no-shapes"], cpu["recording"] / cpu["--no-shapes"]
    print(f"  with / without: wall {ratio[0]:.3f}, CPU {ratio[1]:.3f}")
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    compile_quickdev()
    ratios = []
    with tempfile.TemporaryDirectory(prefix="quickdev-shapes-bench-") as scratch:
        for name, source in WORKLOADS.items():
            folder = Path(scratch) / source
            shutil.copytree(SCRIPTS / source, folder)
            ratios.append(workload(name, folder, options.repeat))
    wall, cpu = max(ratios)
    print(
        f"quick-dev with / without shape recording (worst workload): wall {wall:.3f}, "
        f"CPU {cpu:.3f} (goal <= {GOAL})"
    )


if __name__ == "__main__":
    main()
