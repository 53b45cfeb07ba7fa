"""Time to a verdict at the scripts' own batch sizes: default-flag quick-dev runs beside the same
runs with ``--full-batch``.

Cases, each a public script run unmodified with its own defaults:

- pytorch/examples ``imagenet/main.py --dummy`` (ResNet-18, ``-b 256``), with a stand-in for
  torchvision (``workloads/torchvision_standin``: faithful ResNet and FakeData) where the
  torchvision wheel does not install beside the project's CPU torch;
- nanoGPT ``train.py config/train_shakespeare_char.py`` (batch 64 x 256), on synthetic
  ``data/shakespeare_char/*.bin`` of the real vocabulary's size;
- a LightningModule with a large batch (``workloads/lightning_large_batch.py``).

The public checkouts are not part of this repository: pass them (``--examples DIR``,
``--nanogpt DIR``; a case without one is left out). Each case runs in a scratch copy, default
flags then ``--full-batch``; the full-batch run of a costly case may end at the job's default
300 s timeout, and then its wall is a floor (the ratio a ceiling). Goal: every default run
<= 30 s, and <= 0.2 of its full-batch run where the bound applies (a DataLoader's step above
``--step-seconds``; nanoGPT's hand-made batches keep their size). The machine's load average
is printed beside each figure: on a shared machine the seconds follow it.

    python benchmarks/time_to_verdict.py --examples ~/src/examples --nanogpt ~/src/nanoGPT
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from precompiled import compile_quickdev

WORKLOADS = Path(__file__).resolve().parent / "workloads"
GOAL_S = 30.0
GOAL_RATIO = 0.2
# Above the job's own timeout (300 s) and its finishing: a run is never cut by this.
RUN_LIMIT_S = 900


@dataclass
class Case:
    name: str
    prepare: Callable[[Path], tuple[list[str], dict[str, str]]]  # folder -> script args, env


def _imagenet(examples: Path) -> Case:
    def prepare(folder: Path) -> tuple[list[str], dict[str, str]]:
        shutil.copy(examples / "imagenet" / "main.py", folder / "main.py")
        # Outside the script's folder: a library to the job, as an installed torchvision is.
        standin = folder.parent / "standin"
        if not standin.exists():
            shutil.copytree(WORKLOADS / "torchvision_standin", standin)
        return ["main.py", "--dummy"], {"PYTHONPATH": str(standin)}

    return Case("imagenet resnet18 -b 256", prepare)


def _nanogpt(checkout: Path) -> Case:
    def prepare(folder: Path) -> tuple[list[str], dict[str, str]]:
        for name in ("train.py", "model.py", "configurator.py"):
            shutil.copy(checkout / name, folder / name)
        (folder / "config").mkdir()
        shutil.copy(checkout / "config" / "train_shakespeare_char.py", folder / "config")
        data = folder / "data" / "shakespeare_char"
        data.mkdir(parents=True)
        # The real dataset's sizes and vocabulary (65 characters), random tokens.
        rng = np.random.default_rng(0)
        rng.integers(0, 65, 1_003_854, dtype=np.uint16).tofile(data / "train.bin")
        rng.integers(0, 65, 111_540, dtype=np.uint16).tofile(data / "val.bin")
        chars = [chr(32 + i) for i in range(65)]
        meta = {
            "vocab_size": 65,
            "itos": dict(enumerate(chars)),
            "stoi": {c: i for i, c in enumerate(chars)},
        }
        with open(data / "meta.pkl", "wb") as file:
            pickle.dump(meta, file)
        return ["train.py", "config/train_shakespeare_char.py"], {}

    return Case("nanoGPT shakespeare_char", prepare)


def _lightning() -> Case:
    def prepare(folder: Path) -> tuple[list[str], dict[str, str]]:
        shutil.copy(WORKLOADS / "lightning_large_batch.py", folder / "train.py")
        return ["train.py"], {}

    return Case("Lightning batch 1024", prepare)


@dataclass
class Run:
    wall_s: float
    status: str
    stop_reason: str
    step_cost: list[str]
    load: tuple[float, float]  # the 1-minute load average before and after


def _run(folder: Path, args: list[str], env: dict[str, str], *options: str) -> Run:
    command = [
        sys.executable,
        "-m",
        "quickdev",
        "run",
        "--json",
        "--runs-dir",
        str(folder.parent / "runs"),
        *options,
        *args,
    ]
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.run(
        command,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT_S,
        env={**os.environ, **env},
    )
    wall = time.perf_counter() - started
    lines = proc.stdout.strip().splitlines()
    if not lines or not lines[-1].startswith("{"):
        raise SystemExit(f"{' '.join(command)} printed no result:\n{proc.stderr[-3000:]}")
    result = json.loads(lines[-1])
    if result["status"] not in ("passed", "stopped"):
        print(proc.stderr[-3000:], file=sys.stderr)
    lines = [cost["line"] for cost in result.get("step_cost") or []]
    return Run(
        wall,
        result["status"],
        result["stop_reason"] or "",
        lines,
        (load_before, os.getloadavg()[0]),
    )


def _load(run: Run) -> str:
    return f"{run.load[0]:.1f}/{run.load[1]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--examples", type=Path, help="a checkout of pytorch/examples")
    parser.add_argument("--nanogpt", type=Path, help="a checkout of karpathy/nanoGPT")
    parser.add_argument("--no-lightning", action="store_true", help="leave the Lightning case out")
    parser.add_argument("--default-only", action="store_true", help="no --full-batch runs")
    options = parser.parse_args()
    cases = [
        *([_imagenet(options.examples)] if options.examples else []),
        *([_nanogpt(options.nanogpt)] if options.nanogpt else []),
        *([] if options.no_lightning else [_lightning()]),
    ]
    compile_quickdev()
    print(f"{os.cpu_count()} CPUs; torch threads as each job sets them")
    print(
        f"{'case':26} {'default s':>9} {'status':>16} {'full-batch s':>12} {'status':>16} "
        f"{'ratio':>7}  load 1m (before/after each run)"
    )
    failures = []
    for case in cases:
        with tempfile.TemporaryDirectory() as scratch:
            runs = []
            for flags in [()] if options.default_only else [(), ("--full-batch",)]:
                folder = Path(scratch) / ("full" if flags else "default")
                folder.mkdir()
                args, env = case.prepare(folder)
                runs.append(_run(folder, args, env, *flags))
        default = runs[0]
        shrunk = any("→" in line for line in default.step_cost)
        status = f"{default.status} {default.stop_reason}"[:16]
        if len(runs) > 1:
            full = runs[1]
            timed_out = full.stop_reason == "timeout"
            ratio = default.wall_s / full.wall_s
            ratio_text = f"{'<=' if timed_out else ''}{ratio:.2f}"
            full_text = f"{'>=' if timed_out else ''}{full.wall_s:.1f}"
            full_status = f"{full.status} {full.stop_reason}"[:16]
            loads = f"{_load(default)}, {_load(full)}"
        else:
            ratio, ratio_text, full_text, full_status = None, "-", "-", "-"
            loads = _load(default)
        print(
            f"{case.name:26} {default.wall_s:9.1f} {status:>16} {full_text:>12} "
            f"{full_status:>16} {ratio_text:>7}  {loads}"
        )
        for line in default.step_cost:
            print(f"    {line}")
        if default.wall_s > GOAL_S:
            failures.append(f"{case.name}: {default.wall_s:.1f} s > {GOAL_S:g} s")
        if shrunk and ratio is not None and ratio > GOAL_RATIO:
            failures.append(f"{case.name}: ratio {ratio:.2f} > {GOAL_RATIO}")
    print("goals met" if not failures else "goals missed: " + "; ".join(failures))


if __name__ == "__main__":
    main()
