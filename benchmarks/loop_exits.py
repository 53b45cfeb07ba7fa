"""What the loop exits cost (quickdev/limits/loops, quickdev/rewrite).

1. A training loop whose steps each run a pure-Python inner loop of 1e6 iterations
   (``workloads/inner_loop.py``): a default-flag quick-dev run (its loops rewritten, the
   loop-steps budget ending it after 2 steps) beside the same script limited by hand to 2
   steps under plain ``python``, interleaved; wall and CPU ratios. Goal <= 1.03. The
   same hand-limited script started as a job starts the user's code (torch imported and
   frozen first) separates the loop exits from what a job does anyway.
2. The inner loop alone, rewritten and as written, in this process: what the check at
   its head costs per iteration (informational; a loop without a call has none).
3. Rewriting a 2,000-line project (training scripts of this repository, copied under a
   scratch folder): cold (empty cache; goal <= 30 ms) and cached (goal ~0), beside
   Python's own compile of the same sources.

The last line is the quick-dev / plain python ratio of 1.

    python benchmarks/loop_exits.py [--repeat N]
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
from quickdev.limits.loops import LoopTables
from quickdev.limits.loops.transform import LoopExits
from quickdev.rewrite import Rewriter
from quickdev.rewrite.cache import CodeCache

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORKLOAD = HERE / "workloads" / "inner_loop.py"
PROJECT_SOURCES = [
    REPO / "examples",
    REPO / "tests" / "job" / "idioms",
    REPO / "tests" / "job" / "device_scripts",
]
PROJECT_LINES = 2000
FROZEN_START = (
    "import runpy, sys, torch; from quickdev.collector import freeze_imports; freeze_imports(); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command: list[str], cwd: Path) -> tuple[float, float, str]:
    cpu_before = _children_cpu_s()
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-2000:]}")
    return wall, _children_cpu_s() - cpu_before, proc.stdout


def whole_script(repeat: int) -> float:
    python = sys.executable
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        shutil.copy(WORKLOAD, folder / "train.py")
        hand = folder / "hand.py"
        hand.write_text(WORKLOAD.read_text().replace("range(10_000)", "range(2)"))
        quick = [python, "-m", "quickdev", "run", "--runs-dir", str(folder / "runs"), "train.py"]
        # One run first: the rewritten code is then cached, as from a user's second run on.
        _timed(quick, folder)
        times: dict[str, list[tuple[float, float]]] = {"plain": [], "frozen": [], "quick": []}
        for _ in range(repeat):  # interleaved, so load drift hits all alike
            wall, cpu, out = _timed([python, str(hand)], folder)
            assert "steps 2" in out, out
            times["plain"].append((wall, cpu))
            times["frozen"].append(_timed([python, "-c", FROZEN_START, str(hand)], folder)[:2])
            wall, cpu, out = _timed(quick, folder)
            assert "steps 2" in out, out
            times["quick"].append((wall, cpu))
    wall = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
    print(f"{'':24} {'wall s':>8} {'CPU s':>8}")
    for name, label in (("plain", "plain python, 2 steps"), ("frozen", "frozen start, 2 steps")):
        print(f"{label:24} {wall[name]:8.2f} {cpu[name]:8.2f}")
    print(f"{'quick-dev, default flags':24} {wall['quick']:8.2f} {cpu['quick']:8.2f}")
    print(
        f"quick-dev / frozen start: wall {wall['quick'] / wall['frozen']:.3f}, "
        f"CPU {cpu['quick'] / cpu['frozen']:.3f}"
    )
    return wall["quick"] / wall["plain"], cpu["quick"] / cpu["plain"]


INNER = """\
def inner(text):
    kept = []
    for ch in text:
        if ch.isalpha():
            kept.append(ord(ch))
    return kept
"""


def inner_loop(repeat: int) -> None:
    text = "the quick brown fox jumps over the lazy dog " * 22_728
    plain: dict[str, object] = {}
    exec(compile(INNER, "inner.py", "exec"), plain)
    rewritten: dict[str, object] = {}
    code = Rewriter([LoopExits(LoopTables())], CodeCache(None)).code_for(INNER.encode(), "inner.py")
    assert code is not None
    exec(code, rewritten)
    best = {"plain": float("inf"), "rewritten": float("inf")}
    for _ in range(repeat * 3):
        for name, namespace in (("plain", plain), ("rewritten", rewritten)):
            started = time.process_time()
            namespace["inner"](text)  # type: ignore[operator]
            best[name] = min(best[name], time.process_time() - started)
    per_iteration_ns = (best["rewritten"] - best["plain"]) / len(text) * 1e9
    print(
        f"inner loop of {len(text):,} iterations alone: {best['plain'] * 1000:.1f} ms as written, "
        f"{best['rewritten'] * 1000:.1f} ms rewritten ({best['rewritten'] / best['plain']:.3f}, "
        f"{per_iteration_ns:+.1f} ns an iteration)"
    )


def project_files(folder: Path) -> list[Path]:
    """Training scripts of this repository copied under ``folder`` (a second copy in a
    folder of its own where they are too few) up to 2,000 lines."""
    sources = sorted(p for root in PROJECT_SOURCES for p in root.rglob("*.py"))
    files: list[Path] = []
    lines = 0
    for copy in range(10):
        for source in sources:
            target = folder / f"copy{copy}" / source.relative_to(REPO)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)
            files.append(target)
            lines += source.read_text().count("\n")
            if lines >= PROJECT_LINES:
                return files
    return files


def rewrite_cost(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        files = project_files(folder / "project")
        sources = [(p.read_bytes(), str(p)) for p in files]
        lines = sum(s.count(b"\n") for s, _ in sources)
        cold, cached, plain = [], [], []
        for n in range(repeat * 3):
            cache = CodeCache(folder / f"cache{n}")
            started = time.perf_counter()
            rewriter = Rewriter([LoopExits(LoopTables())], cache)
            for source, name in sources:
                rewriter.code_for(source, name)
            cold.append(time.perf_counter() - started)
            started = time.perf_counter()
            again = Rewriter([LoopExits(LoopTables())], CodeCache(folder / f"cache{n}"))
            for source, name in sources:
                again.code_for(source, name)
            cached.append(time.perf_counter() - started)
            assert again.stats.cached == rewriter.stats.rewritten > 0
            started = time.perf_counter()
            for source, name in sources:
                compile(source, name, "exec", dont_inherit=True)
            plain.append(time.perf_counter() - started)
    print(
        f"rewriting {lines:,} lines in {len(files)} files: cold {min(cold) * 1000:.1f} ms "
        f"(goal <= 30), cached {min(cached) * 1000:.1f} ms (goal ~0); "
        f"python's own compile {min(plain) * 1000:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    compile_quickdev()
    rewrite_cost(options.repeat)
    inner_loop(options.repeat)
    wall, cpu = whole_script(options.repeat)
    print(
        f"quick-dev / plain python, 1e6-iteration inner loop: wall {wall:.3f}, "
        f"CPU {cpu:.3f} (goal <= 1.03)"
    )


if __name__ == "__main__":
    main()
