"""Default-flag quick-dev runs of every loop style beside the same scripts limited by hand.

Each style is one of the idioms under ``tests/job/idioms``. The hand-limited variant is
the same source with its own numbers made small (as a user writes a smoke test: fewer
epochs, iterations, samples, no workers), run with plain ``python``; the quick-dev run
uses the unmodified script and default flags. Goal: each ratio <= 1.05 and each
quick-dev run under 30 s. Both run in a scratch copy, so nothing lands in the repo.

A job freezes what its imports leave alive (``quickdev.collector``), which makes it
faster than plain ``python`` where full collections walk torch's objects. The last
column shows Quickdev's own cost apart from that: the quick-dev run beside the
hand-limited script run with the same imports frozen first.

    python benchmarks/budgets.py [--repeat N]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from precompiled import compile_quickdev

IDIOMS = Path(__file__).resolve().parent.parent / "tests" / "job" / "idioms"

# script -> (source replacements that limit it by hand, its own arguments when limited)
HAND_LIMITS: dict[str, tuple[list[tuple[str, str]], list[str]]] = {
    "endless_trainer.py": ([("num_workers=4", "num_workers=0")], ["--max-iters", "2"]),
    # A quick-dev run ends each evaluation loop after 20 forwards and the training loop
    # after 2 steps, then runs the rest of the script: so do the hand limits.
    "gpt_loop.py": (
        [("eval_iters = 200", "eval_iters = 20"), ("max_iters = 5000", "max_iters = 1")],
        [],
    ),
    "word_lm.py": (
        [
            (
                "range(0, source.size(0) - 1, args.bptt)",
                "range(0, min(source.size(0) - 1, 20 * args.bptt), args.bptt)",
            ),
            (
                "range(0, train_data.size(0) - 1, args.bptt)",
                "range(0, 2 * args.bptt, args.bptt)",
            ),
        ],
        ["--epochs", "1"],
    ),
    "try_loop.py": (
        [
            ("range(100)", "range(1)"),
            ("640", "16"),
            ("randn(64,", "randn(16,"),
        ],
        [],
    ),
    "hf_trainer.py": (
        [
            ("num_train_epochs=3", "max_steps=2"),
            ("dataloader_num_workers=4", "dataloader_num_workers=0"),
            ("Tokens(80)", "Tokens(8)"),
        ],
        [],
    ),
    "accelerate_loop.py": (
        [
            ("512", "32"),
            ("128", "32"),
            ("range(5)", "range(1)"),
            ("num_workers=4", "num_workers=0"),
        ],
        [],
    ),
    "fabric_loop.py": (
        [('accelerator="cuda"', 'accelerator="cpu"'), ("256", "16"), ("range(10)", "range(1)")],
        [],
    ),
}


# The hand-limited script, started as a job starts the user's code: torch imported and what
# the import left alive frozen first, by the job's own function.
FROZEN_START = (
    "import runpy, sys, torch; from quickdev.collector import freeze_imports; freeze_imports(); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds (CPU time is less disturbed by a busy machine), and stdout."""
    cpu_before = _children_cpu_s()
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-2000:]}")
    return wall, _children_cpu_s() - cpu_before, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", help="one script name, e.g. gpt_loop.py")
    options = parser.parse_args()
    compile_quickdev()
    python = sys.executable
    ratios: list[float] = []
    cpu_ratios: list[float] = []
    worst_wall = 0.0
    print(
        f"{'style':20} {'hand-limited s':>14} {'quick-dev s':>12} {'ratio':>6} "
        f"{'CPU ratio':>9} {'vs frozen':>9}  stop_reason"
    )
    for script, (replacements, own_args) in HAND_LIMITS.items():
        if options.only and script != options.only:
            continue
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            shutil.copy(IDIOMS / script, folder / script)
            hand = folder / f"hand_{script}"
            source = (IDIOMS / script).read_text()
            for old, new in replacements:
                assert old in source, (script, old)
                source = source.replace(old, new)
            hand.write_text(source)
            quick_cmd = [
                python,
                "-m",
                "quickdev",
                "run",
                "--json",
                "--runs-dir",
                str(folder / "runs"),
            ]
            hand_times: list[float] = []
            quick_times: list[float] = []
            hand_cpu: list[float] = []
            quick_cpu: list[float] = []
            frozen_times: list[float] = []
            reason = ""
            for _ in range(options.repeat):  # interleaved, so load drift hits both alike
                wall, cpu, _out = _timed([python, str(hand), *own_args], folder)
                hand_times.append(wall)
                hand_cpu.append(cpu)
                frozen = [python, "-c", FROZEN_START, str(hand), *own_args]
                frozen_times.append(_timed(frozen, folder)[0])
                wall, cpu, out = _timed([*quick_cmd, str(folder / script)], folder)
                quick_times.append(wall)
                quick_cpu.append(cpu)
                reason = out.strip().splitlines()[-1].split('"stop_reason": "')[1].split('"')[0]
        hand_s, quick_s = statistics.median(hand_times), statistics.median(quick_times)
        cpu_ratio = statistics.median(quick_cpu) / statistics.median(hand_cpu)
        ratios.append(quick_s / hand_s)
        cpu_ratios.append(cpu_ratio)
        worst_wall = max(worst_wall, max(quick_times))
        frozen_ratio = quick_s / statistics.median(frozen_times)
        print(
            f"{script:20} {hand_s:14.2f} {quick_s:12.2f} {quick_s / hand_s:6.2f} "
            f"{cpu_ratio:9.2f} {frozen_ratio:9.2f}  {reason}"
        )
    worst = f"worst ratio {max(ratios):.2f}, CPU {max(cpu_ratios):.2f} (goal <= 1.05)"
    print(f"{worst}; slowest quick-dev run {worst_wall:.1f} s (goal < 30)")


if __name__ == "__main__":
    main()
