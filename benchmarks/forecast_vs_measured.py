"""The memory forecast against the GPU: forecast and measured peaks, row by row.

For each training script under ``benchmarks/gpu_models/`` (nanoGPT's shakespeare_char and
GPT-2 124M configurations, a ResNet-50 at two batch sizes, an LSTM language model, a
Hugging Face BERT built from its configuration), in float32 and under 16-bit autocast:

- forecast: ``quickdev run --memory-forecast DEVICE SCRIPT`` (DEVICE: this GPU's own name),
  the forecast's peak (as ``max_memory_allocated`` counts) and reserved segments, read from
  the result the job prints;
- measured: the same script and arguments under plain ``python``, in a fresh process,
  ``torch.cuda.max_memory_allocated()`` and ``max_memory_reserved()`` over its first three
  training steps (the forecast is of a steady step, the optimizer's state already there,
  which the second step is).

Each row prints both with the forecast's error in %; the goal is within ±10% of reserved on
every row. The last column is reserved as it stood after the first optimizer step alone
(that step makes the optimizer's state at its end, once its activations are freed; from
the second step on both are held at once). The last line counts the rows that meet the
goal. Runs four processes at a time by default: each measures its own allocator, and four
of these (15 GB at most each) fit one 80 GB GPU; a row whose allocator had to retry (the
GPU was full) says so.

    python benchmarks/forecast_vs_measured.py [--jobs 4] [--only resnet] [--json out.json]
    python benchmarks/forecast_vs_measured.py --dry-run   # no GPU: tiny sizes, forecast only

``--dry-run`` checks the plumbing on a CPU machine: every script at tiny sizes, forecast
through the CUDA stand-in, and each script once under plain python on the CPU.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# Run as a script: the repository root instead of this folder, whose profile.py would
# stand in for the standard library's (cProfile, which torch and transformers import).
sys.path[0] = str(REPO)
MODELS = REPO / "benchmarks" / "gpu_models"
GOAL = 0.10
MIB = 1 << 20
MEASURE_PREFIX = "MEASURED "
MEASURE_FLAG = "--measure"  # the child's mode: ``--measure SCRIPT -- ARGS``


@dataclass(frozen=True)
class Row:
    name: str
    precision: str
    script: str
    args: tuple[str, ...]
    optimizer: bool = True  # a torch.optim optimizer steps (not hand-written SGD)


def rows() -> list[Row]:
    """Large and small rows alternate, so the processes running at once seldom hold two of
    the largest steps' memory together."""
    out: list[Row] = []
    for on in (False, True):
        nano = ("--dtype", "bfloat16" if on else "float32")
        resnet = ("--amp",) if on else ()
        out += [
            Row("nanoGPT gpt2 12x1024", _p(on, "bf16"), "nanogpt.py", ("--config", "gpt2", *nano)),
            Row("LSTM LM medium 20x35", _p(on, "bf16"), "lstm_lm.py",
                ("--amp-dtype", "bfloat16") if on else (), optimizer=False),
            Row("ResNet-50 b128", _p(on, "fp16+scaler"), "resnet50.py", ("-b", "128", *resnet)),
            Row("nanoGPT shakespeare 64x256", _p(on, "bf16"), "nanogpt.py",
                ("--config", "shakespeare_char", *nano)),
            Row("BERT-base (HF) 32x128", _p(on, "bf16"), "hf_bert.py",
                ("--mixed-precision", "bf16" if on else "no")),
            Row("ResNet-50 b64", _p(on, "fp16+scaler"), "resnet50.py", ("-b", "64", *resnet)),
        ]  # fmt: skip
    return out


def _p(on: bool, what: str) -> str:
    return what if on else "fp32"


@dataclass
class Outcome:
    row: Row
    forecast_allocated: int | None = None
    forecast_reserved: int | None = None
    measured_allocated: int | None = None
    measured_reserved: int | None = None
    per_step_reserved: list[int] = field(default_factory=list)
    alloc_retries: int | None = None
    forecast_detail: dict[str, Any] = field(default_factory=dict)
    measured_detail: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def error(self) -> float | None:
        """The forecast's error against measured reserved, as a share."""
        if not self.forecast_reserved or not self.measured_reserved:
            return None
        return self.forecast_reserved / self.measured_reserved - 1

    @property
    def allocated_error(self) -> float | None:
        if not self.forecast_allocated or not self.measured_allocated:
            return None
        return self.forecast_allocated / self.measured_allocated - 1


# -- one measurement: a child process ------------------------------------------------------


def measure_here(script: str, args: list[str]) -> None:
    """Run ``script`` as ``__main__`` in this (fresh) process; print the allocator's peaks."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    per_step: list[int] = []

    def after_step(optimizer: Any, a: Any, k: Any) -> None:
        if torch.cuda.is_available():
            per_step.append(torch.cuda.max_memory_reserved())

    register_optimizer_step_post_hook(after_step)
    sys.argv = [script, *args]
    sys.path.insert(0, str(Path(script).parent))
    runpy.run_path(script, run_name="__main__")
    figures: dict[str, Any] = {"per_step_reserved": per_step}
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        stats = torch.cuda.memory_stats()
        figures |= {
            "allocated": torch.cuda.max_memory_allocated(),
            "reserved": torch.cuda.max_memory_reserved(),
            "alloc_retries": stats.get("num_alloc_retries", 0),
            # Each figure's peak, pools apart: where a forecast misses, these say whether
            # blocks, segments, rounding or fragmentation is what it missed.
            "peaks": {k: v for k, v in stats.items() if k.endswith(".peak")},
        }
    print(MEASURE_PREFIX + json.dumps(figures), flush=True)


# -- the driver ----------------------------------------------------------------------------


class Runner:
    def __init__(self, args: argparse.Namespace, device_name: str, runs_dir: Path) -> None:
        self.args = args
        self.device_name = device_name
        self.runs_dir = runs_dir
        self.started = time.monotonic()
        self.env = dict(os.environ, PYTHONUNBUFFERED="1")
        if importlib.util.find_spec("quickdev") is None:  # not installed: the source tree
            path = [str(REPO / "python_backend"), self.env.get("PYTHONPATH", "")]
            self.env["PYTHONPATH"] = os.pathsep.join(p for p in path if p)

    def script_args(self, row: Row, plain: bool) -> list[str]:
        extra = ["--tiny"] if self.args.dry_run else []
        if plain and self.args.dry_run:
            extra += ["--device", "cpu"]  # no GPU: the script's own CPU path
        return [*row.args, *extra]

    def late(self) -> bool:
        return time.monotonic() - self.started > self.args.deadline_s

    def run(self, command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env=self.env, cwd=REPO
        )

    def forecast(self, row: Row, outcome: Outcome) -> None:
        if self.late():
            outcome.problems.append("forecast not run: the deadline passed")
            return
        script = str(MODELS / row.script)
        name = "-".join("".join(c for c in row.name if c.isalnum() or c == " ").split())
        name = f"{name}-{row.precision}".replace("+", "-")
        command = [
            sys.executable, "-m", "quickdev", "run", "--json", "--memory-forecast",
            self.device_name, "--max-steps", "2", "--runs-dir", str(self.runs_dir),
            "--name", name, script, "--", *self.script_args(row, plain=False),
        ]  # fmt: skip
        started = time.monotonic()
        try:
            proc = self.run(command, self.args.timeout_s)
        except subprocess.TimeoutExpired:
            outcome.problems.append(f"forecast: quickdev run timed out ({self.args.timeout_s} s)")
            return
        finally:
            outcome.seconds["forecast"] = round(time.monotonic() - started, 1)
        lines = proc.stdout.strip().splitlines()
        if not lines or not lines[-1].startswith("{"):
            tail = (proc.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
            outcome.problems.append(f"forecast: exit {proc.returncode}, no result: {tail}")
            return
        result = json.loads(lines[-1])
        forecast = result.get("memory_forecast") or {}
        if result.get("status") not in ("passed", "stopped"):
            error = result.get("error") or {}
            outcome.problems.append(
                f"forecast job {result.get('status')}: {error.get('type')}: {error.get('message')}"
            )
        if forecast.get("peak") is None:
            outcome.problems.append(f"no forecast: {forecast.get('error')}")
            return
        outcome.forecast_allocated = forecast["peak"]
        outcome.forecast_reserved = forecast["reserved"]
        outcome.forecast_detail = {
            key: forecast.get(key)
            for key in ("categories", "peak_phase", "peak_module", "precision", "workspace")
        } | {"replay_s": forecast.get("duration_s"), "device": result.get("device")}

    def measure(self, row: Row, outcome: Outcome) -> None:
        if self.late():
            outcome.problems.append("measurement not run: the deadline passed")
            return
        script = str(MODELS / row.script)
        command = [sys.executable, __file__, MEASURE_FLAG, script, "--",
                   *self.script_args(row, plain=True)]  # fmt: skip
        started = time.monotonic()
        try:
            proc = self.run(command, self.args.timeout_s)
        except subprocess.TimeoutExpired:
            outcome.problems.append(f"measurement timed out ({self.args.timeout_s} s)")
            return
        finally:
            outcome.seconds["measure"] = round(time.monotonic() - started, 1)
        found = [ln for ln in proc.stdout.splitlines() if ln.startswith(MEASURE_PREFIX)]
        if proc.returncode != 0 or not found:
            tail = (proc.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
            outcome.problems.append(f"measurement: exit {proc.returncode}: {tail}")
            return
        figures = json.loads(found[-1].removeprefix(MEASURE_PREFIX))
        outcome.measured_allocated = figures.get("allocated")
        outcome.measured_reserved = figures.get("reserved")
        outcome.per_step_reserved = figures.get("per_step_reserved", [])
        outcome.alloc_retries = figures.get("alloc_retries")
        outcome.measured_detail = {
            k: v for k, v in figures.items() if k not in ("allocated", "reserved")
        }
        if row.optimizer and not outcome.per_step_reserved and not self.args.dry_run:
            # A GradScaler skips the steps whose gradients overflowed: then no optimizer
            # state was made, and the measured peak lacks what the forecast counts.
            outcome.problems.append("no optimizer step ran in the measured steps")
        if outcome.alloc_retries:
            outcome.problems.append(
                f"the allocator retried {outcome.alloc_retries} times (the GPU was full: "
                "its reserved figure is not the step's own)"
            )


def gpu_name() -> tuple[str, str]:
    """(what the GPU calls itself, the --memory-forecast DEVICE for it)."""
    import torch
    from quickdev.forecast.devices import AUTO, KNOWN_DEVICES_GB

    if not torch.cuda.is_available():
        return "no CUDA device (the CPU stand-in)", "h100"
    name = torch.cuda.get_device_name(0)
    lowered = name.lower().replace(" ", "")
    for known in sorted(KNOWN_DEVICES_GB, key=len, reverse=True):
        if known.replace("-", "") in lowered.replace("-", ""):
            return name, known
    return name, AUTO


def mib(value: int | None) -> str:
    return f"{value / MIB:,.0f}" if value else "-"


def percent(share: float | None) -> str:
    return f"{share * 100:+.1f}%" if share is not None else "-"


def table(outcomes: list[Outcome]) -> list[str]:
    head = (
        f"{'workload':<27} {'precision':<11} {'fc alloc':>9} {'meas alloc':>10} {'err':>7}"
        f" {'fc reserved':>11} {'meas reserved':>13} {'err':>7}  {'goal':<4}"
        f" {'1st step res':>12}"
    )
    lines = [head + "   (MiB)", "-" * len(head)]
    for o in outcomes:
        error = o.error
        verdict = "-" if error is None else ("ok" if abs(error) <= GOAL else "MISS")
        lines.append(
            f"{o.row.name:<27} {o.row.precision:<11} {mib(o.forecast_allocated):>9}"
            f" {mib(o.measured_allocated):>10} {percent(o.allocated_error):>7}"
            f" {mib(o.forecast_reserved):>11} {mib(o.measured_reserved):>13}"
            f" {percent(error):>7}  {verdict:<4}"
            f" {mib(o.per_step_reserved[0] if o.per_step_reserved else None):>12}"
        )
        lines += [f"    ! {problem}" for problem in o.problems]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="no GPU: tiny sizes, CPU")
    parser.add_argument("--jobs", type=int, default=4, help="processes at a time (default 4)")
    parser.add_argument("--only", help="rows whose workload name contains this")
    parser.add_argument("--device-name", help="--memory-forecast DEVICE (default: this GPU's)")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--timeout-s", type=float, default=180, help="per process")
    parser.add_argument(
        "--deadline-s", type=float, default=1e9, help="start nothing after this many seconds"
    )
    if sys.argv[1:2] == [MEASURE_FLAG]:  # a child: the script's own arguments follow
        measure_here(sys.argv[2], sys.argv[4:] if sys.argv[3:4] == ["--"] else sys.argv[3:])
        return 0
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "python_backend"))
    name, device = gpu_name()
    device = args.device_name or device
    chosen = [r for r in rows() if not args.only or args.only.lower() in r.name.lower()]
    import torch

    allocator = os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or "default"
    print(f"torch {torch.__version__}, allocator settings: {allocator}")
    print(f"forecast vs measured on {name}: --memory-forecast {device}, {len(chosen)} rows, "
          f"{args.jobs} processes at a time{' (dry run: tiny sizes)' if args.dry_run else ''}",
          flush=True)  # fmt: skip
    outcomes = [Outcome(row) for row in chosen]
    with tempfile.TemporaryDirectory(prefix="forecast-runs-") as folder:
        runner = Runner(args, device, Path(folder))
        tasks = [(runner.forecast, o) for o in outcomes] + [(runner.measure, o) for o in outcomes]
        # Interleaved, largest rows first: a row's two processes run near each other.
        tasks = [
            t
            for pair in zip(tasks[: len(outcomes)], tasks[len(outcomes) :], strict=True)
            for t in pair
        ]
        pool = ThreadPoolExecutor(max(args.jobs, 1))
        try:
            for future in [pool.submit(task, outcome.row, outcome) for task, outcome in tasks]:
                future.result()
        except KeyboardInterrupt:  # stopped from outside: the rows so far still print
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second one must not lose them
            print("interrupted: the rows below are those finished", flush=True)
            runner.started = -1e12  # nothing more starts
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    outcomes.sort(key=lambda o: (o.row.script, o.row.name, o.row.precision != "fp32"))
    print("\n".join(table(outcomes)))
    if args.json:
        args.json.write_text(
            json.dumps(
                {"gpu": name, "device": device, "rows": [asdict(o) for o in outcomes]}, indent=1
            )
        )
    judged = [o for o in outcomes if o.error is not None]
    within = sum(abs(o.error) <= GOAL for o in judged if o.error is not None)
    failed = [o for o in outcomes if o.forecast_reserved is None or (
        o.measured_reserved is None and not args.dry_run)]  # fmt: skip
    if args.dry_run:
        made = sum(o.forecast_reserved is not None for o in outcomes)
        print(f"dry run: {made}/{len(outcomes)} forecasts made (no GPU: nothing measured)")
    else:
        print(f"within ±{GOAL:.0%} of measured reserved: {within}/{len(outcomes)} rows")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
