"""What keeping the user's files intact costs: the file journal, measured side by side.

1. ``quickdev run`` on the examples with the journal on (the default) against
   ``--keep-outputs`` (journal off), interleaved repetitions, medians of wall and CPU
   time (goal: ratio <= 1.02; on a shared machine the CPU ratio is the steadier one).
2. A job that overwrites a 1 GB checkpoint: the backup is a rename (the original
   inode moves aside), so its time is a rename's and no bytes are copied (free
   disk space does not drop by the checkpoint's size).

    python benchmarks/journal.py [--repeat N] [--checkpoint-mb MB]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from quickdev.limits import journal
from quickdev.limits.patching import Patcher
from quickdev.rundir.ids import create_run_dir
from quickdev.rundir.layout import BACKUPS_DIR

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cost(repeat: int) -> tuple[float, float]:
    """The worst wall and CPU ratios, journal on / off. On a busy machine wall time drifts
    by more than the journal costs; CPU time is the steadier figure."""
    python = sys.executable
    scripts = {"train_loop": EXAMPLES / "train_loop.py", "save_model": EXAMPLES / "save_model.py"}
    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="quickdev-journal-") as tmp:
        cwd = Path(tmp)
        (cwd / "model.pt").write_bytes(b"the user's model" * 1000)
        variants = {
            f"{name} {label}": [python, "-m", "quickdev", "run", *flags, str(path)]
            for name, path in scripts.items()
            for label, flags in (("journal", []), ("off", ["--keep-outputs"]))
        }
        names = list(variants)
        for rep in range(repeat + 1):
            for name in names[rep % len(names) :] + names[: rep % len(names)]:
                cpu_before, started = _cpu(), time.perf_counter()
                subprocess.run(variants[name], cwd=cwd, capture_output=True, check=True)
                if rep:  # the first round warms the file cache
                    wall.setdefault(name, []).append(time.perf_counter() - started)
                    cpu.setdefault(name, []).append(_cpu() - cpu_before)
    ratios, cpu_ratios = [], []
    for name in scripts:
        on, off = f"{name} journal", f"{name} off"
        w_on, w_off = statistics.median(wall[on]), statistics.median(wall[off])
        c_on, c_off = statistics.median(cpu[on]), statistics.median(cpu[off])
        ratios.append(w_on / w_off)
        cpu_ratios.append(c_on / c_off)
        print(
            f"{name:12s} wall {w_on:.2f} s vs {w_off:.2f} s off ({w_on / w_off:.3f}); "
            f"CPU {c_on:.2f} s vs {c_off:.2f} s ({c_on / c_off:.3f})"
        )
    return max(ratios), max(cpu_ratios)


def checkpoint_backup(size_mb: int) -> tuple[float, int, bool]:
    """Seconds the backup of an overwritten checkpoint took, bytes of free space it used,
    and whether the backup is the original inode (a rename)."""
    with tempfile.TemporaryDirectory(prefix="quickdev-journal-", dir=".") as tmp:
        root = Path(tmp).resolve()
        checkpoint = root / "model.pt"
        with open(checkpoint, "wb") as f:
            block = os.urandom(1024 * 1024)
            for _ in range(size_mb):
                f.write(block)
        inode = checkpoint.stat().st_ino
        run_dir = create_run_dir(root / ".quickdev" / "runs", "bench")
        cwd = os.getcwd()
        os.chdir(root)
        patcher = Patcher()
        session = journal.install(patcher, run_dir)
        try:
            free_before = os.statvfs(root).f_bavail * os.statvfs(root).f_frsize
            started = time.perf_counter()
            with open(checkpoint, "wb") as f:  # the job's torch.save(model, f) starts here
                elapsed = time.perf_counter() - started
                free_after = os.statvfs(root).f_bavail * os.statvfs(root).f_frsize
                f.write(b"new")
            (backup,) = (run_dir / BACKUPS_DIR).iterdir()
            renamed = backup.stat().st_ino == inode
        finally:
            patcher.undo_all()
            session.finish()
            os.chdir(cwd)
        assert checkpoint.stat().st_ino == inode, "the original came back"
    return elapsed, max(0, free_before - free_after), renamed


def size_mb_bytes(size_mb: int) -> int:
    return size_mb * 1024 * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--checkpoint-mb", type=int, default=1024)
    args = parser.parse_args()
    ratio, cpu_ratio = run_cost(args.repeat)
    elapsed, used, renamed = checkpoint_backup(args.checkpoint_mb)
    how = "a rename (same inode)" if renamed else "NOT a rename"
    print(
        f"{args.checkpoint_mb} MB checkpoint overwritten: backup took {elapsed * 1000:.2f} ms, "
        f"{used / 1e6:.1f} MB of disk, {how}"
    )
    no_copy = renamed and used < size_mb_bytes(args.checkpoint_mb) // 10
    print(
        f"journal cost: worst CPU ratio {cpu_ratio:.3f}, wall {ratio:.3f} (goal <= 1.02); "
        f"backup without copy: {no_copy}"
    )


if __name__ == "__main__":
    main()
