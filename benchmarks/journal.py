"""What keeping the user's files intact costs: the file journal, measured side by side.

1. ``quickdev run`` on the examples with the journal on (the default) against
   ``--keep-outputs`` (journal off), interleaved repetitions, medians of wall and CPU
   time (goal: ratio <= 1.02; on a shared machine the CPU ratio is the steadier one),
   with the runs dir on the project's file system and on another one (/dev/shm, where
   a backup is a copy, not a rename).
2. A job that overwrites a 1 GB checkpoint: the backup is a rename (the original
   inode moves aside), so its time is a rename's and no bytes are copied (free
   disk space does not drop by the checkpoint's size).
3. A job that appends one line to a 1 GiB log, against the same job on a 1 KB log
   (goal: ratio <= 1.1): the journal keeps the original length, not a copy; with the
   runs dir on the same and on another file system. What a copy would have cost is
   printed beside it.
4. The start manifest (the safety net) on a tree of 20,000 files, the bound.
5. The copy-on-write alternatives where this machine has them: an overlay mount of the
   folder in a user namespace (its set-up, and the same one-line append, for which the
   overlay copies the whole file up first), and a reflink clone of the file.

    python benchmarks/journal.py [--repeat N] [--checkpoint-mb MB] [--append-mb MB]
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from quickdev.limits import journal
from quickdev.limits.patching import Patcher
from quickdev.processes import PACKAGE_DIR
from quickdev.rundir.ids import create_run_dir
from quickdev.rundir.layout import BACKUPS_DIR

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# The jobs' CPU time without torch's idle OpenMP workers, which spin for a while after each
# parallel region: on a shared 2-core machine their share of a run varies by more than the
# journal costs. One thread makes each run cheaper, so the same cost is a larger share of
# it: the ratio can only read higher for it, never lower.
JOB_ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _cpu() -> float:
    """CPU time of every process a job ran, the job's restart and its journal process
    included: the time of the processes it reaped, and of those it left running, which
    come to this process to be reaped (``_adopt_orphans``, ``_reap_orphans``)."""
    import resource

    _reap_orphans()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _adopt_orphans() -> bool:
    """Become the subreaper of the jobs' processes (Linux), so that a process a job leaves
    behind ends as this process's child and its CPU time is counted."""
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


orphans = 0  # processes that outlived their job (reaped here, their time counted)


def _reap_orphans(timeout_s: float = 10.0) -> None:
    global orphans
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            orphans += 1
        elif time.monotonic() > deadline:
            raise RuntimeError("a job left a process running for more than 10 s")
        else:
            time.sleep(0.01)


@contextlib.contextmanager
def runs_dirs(project: Path) -> Iterator[dict[str, list[str]]]:
    """``--runs-dir`` options by where the runs dir is: on the project's file system (the
    default), and on another one (/dev/shm) where this machine has one."""
    where = {"same fs": ["--runs-dir", str(project / ".quickdev" / "runs")]}
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)) or shm.stat().st_dev == project.stat().st_dev:
        print("runs dir on another file system: none here (no /dev/shm on another device)")
        yield where
        return
    with tempfile.TemporaryDirectory(prefix="quickdev-runs-", dir=shm) as other:
        where["other fs"] = ["--runs-dir", other]
        yield where


def run_cost(repeat: int) -> dict[str, tuple[float, float]]:
    """The worst wall and CPU ratios, journal on / off, by where the runs dir is, each the
    median of the rounds' paired ratios. On a busy machine wall time drifts by more than
    the journal costs; CPU time is the steadier figure."""
    python = sys.executable
    scripts = {"train_loop": EXAMPLES / "train_loop.py", "save_model": EXAMPLES / "save_model.py"}
    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="quickdev-journal-", dir=".") as tmp,
        runs_dirs(Path(tmp).resolve()) as where,
    ):
        cwd = Path(tmp).resolve()
        model, original = cwd / "model.pt", b"the user's model" * 1000
        labels = {"off": ["--keep-outputs", *where["same fs"]]}
        labels.update({f"journal, runs dir on {fs}": flags for fs, flags in where.items()})
        variants = {
            f"{name} {label}": [python, "-m", "quickdev", "run", *flags, str(path)]
            for name, path in scripts.items()
            for label, flags in labels.items()
        }
        names = list(variants)
        for rep in range(repeat + 1):
            for name in names[rep % len(names) :] + names[: rep % len(names)]:
                model.write_bytes(original)  # save_model.py overwrites it
                cpu_before, started = _cpu(), time.perf_counter()
                subprocess.run(
                    variants[name], cwd=cwd, env=JOB_ENV, capture_output=True, check=True
                )
                if rep:  # the first round warms the file cache
                    wall.setdefault(name, []).append(time.perf_counter() - started)
                    cpu.setdefault(name, []).append(_cpu() - cpu_before)
                if "journal" in name:
                    assert model.read_bytes() == original, f"{name}: model.pt not put back"
    worst: dict[str, tuple[float, float]] = {}
    for fs in where:
        ratios, cpu_ratios = [], []
        for name in scripts:
            on, off = f"{name} journal, runs dir on {fs}", f"{name} off"
            w_on, w_off = statistics.median(wall[on]), statistics.median(wall[off])
            c_on, c_off = statistics.median(cpu[on]), statistics.median(cpu[off])
            w_ratio, w_low, w_high = paired(wall[on], wall[off])
            c_ratio, c_low, c_high = paired(cpu[on], cpu[off])
            ratios.append(w_ratio)
            cpu_ratios.append(c_ratio)
            print(
                f"{name:12s} runs dir on {fs}: CPU {c_on:.3f} s vs {c_off:.3f} s off, "
                f"{c_ratio:.3f} ({c_low:.3f}-{c_high:.3f}); wall {w_on:.2f} s vs "
                f"{w_off:.2f} s, {w_ratio:.3f} ({w_low:.3f}-{w_high:.3f})"
            )
        worst[fs] = (max(ratios), max(cpu_ratios))
    return worst


def paired(on: list[float], off: list[float]) -> tuple[float, float, float]:
    """The median of the ratios of the runs made in the same round (neighbours in time,
    so a change of the machine's load between rounds cancels out), and the middle half of
    them: the spread the figure carries."""
    ratios = [a / b for a, b in zip(on, off, strict=True)]
    if len(ratios) < 2:
        return ratios[0], ratios[0], ratios[0]
    low, _, high = statistics.quantiles(ratios, n=4)
    return statistics.median(ratios), low, high


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


APPEND = "with open('app.log', 'a') as f:\n    f.write('one more line\\n')\n"


def _write_file(path: Path, size: int) -> None:
    block = os.urandom(min(size, 1024 * 1024))
    with open(path, "wb") as f:
        for _ in range(max(1, size // len(block))):
            f.write(block)
        f.truncate(size)


Medians = dict[str, tuple[float, float, float, float]]  # fs -> wall big, small; CPU big, small


def append_cost(size_mb: int, repeat: int) -> tuple[Medians, float]:
    """Median wall and CPU times of a quick-dev job appending a line to a ``size_mb`` log
    and to a 1 KB log (interleaved), by where the runs dir is, and the seconds a copy of
    the big log takes (what it used to cost)."""
    from quickdev.limits.journal.backup import copy_aside

    walls: dict[tuple[str, str], list[float]] = {}
    cpus: dict[tuple[str, str], list[float]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="quickdev-append-", dir=".") as tmp,
        runs_dirs(Path(tmp).resolve()) as where,
    ):
        folders = {"big": Path(tmp).resolve() / "big", "small": Path(tmp).resolve() / "small"}
        for name, folder in folders.items():
            folder.mkdir()
            _write_file(folder / "app.log", size_mb_bytes(size_mb) if name == "big" else 1024)
            (folder / "append.py").write_text(APPEND)
        runs = [(name, fs) for fs in where for name in ("small", "big")]
        for rep in range(repeat + 1):
            for name, fs in runs if rep % 2 else runs[::-1]:
                cpu_before, started = _cpu(), time.perf_counter()
                command = [sys.executable, "-m", "quickdev", "run", *where[fs], "append.py"]
                subprocess.run(
                    command, cwd=folders[name], env=JOB_ENV, capture_output=True, check=True
                )
                if rep:
                    walls.setdefault((name, fs), []).append(time.perf_counter() - started)
                    cpus.setdefault((name, fs), []).append(_cpu() - cpu_before)
        big = folders["big"] / "app.log"
        assert big.stat().st_size == size_mb_bytes(size_mb), "the big log was cut back"
        started = time.perf_counter()
        copy_aside(str(big), Path(tmp) / "copy.log")
        copy_s = time.perf_counter() - started
    medians = {
        fs: (
            statistics.median(walls[("big", fs)]),
            statistics.median(walls[("small", fs)]),
            statistics.median(cpus[("big", fs)]),
            statistics.median(cpus[("small", fs)]),
        )
        for fs in where
    }
    return medians, copy_s


def manifest_cost(files: int) -> float:
    """Seconds the start manifest takes on a tree of ``files`` files in 100 folders."""
    from quickdev.limits.journal import manifest

    with tempfile.TemporaryDirectory(prefix="quickdev-manifest-", dir=".") as tmp:
        root = Path(tmp)
        for i in range(files):
            folder = root / f"d{i % 100}"
            folder.mkdir(exist_ok=True)
            (folder / f"f{i}").write_bytes(b"x")
        manifest.take(root, root / ".quickdev" / "runs")  # warm the cache, as a warm tree is
        started = time.perf_counter()
        taken = manifest.take(root, root / ".quickdev" / "runs")
        elapsed = time.perf_counter() - started
        assert taken.complete and len(taken.files) == files
    return elapsed


def copy_on_write(size_mb: int) -> list[str]:
    """What the copy-on-write views cost here, or why they are not available."""
    lines = []
    with tempfile.TemporaryDirectory(prefix="quickdev-cow-", dir=".") as tmp:
        root = Path(tmp).resolve()
        lower, upper, work, merged = (root / n for n in ("lower", "upper", "work", "merged"))
        for folder in (lower, upper, work, merged):
            folder.mkdir()
        _write_file(lower / "big.log", size_mb_bytes(size_mb))
        (lower / "small.log").write_bytes(b"x" * 1024)
        mount = (
            f"mount -t overlay overlay -o lowerdir={lower},upperdir={upper},workdir={work} {merged}"
        )
        for name in ("none", "small.log", "big.log"):
            append = f" && printf 'one more line\\n' >> {merged}/{name}" if name != "none" else ""
            started = time.perf_counter()
            done = subprocess.run(
                ["unshare", "-Urm", "sh", "-c", mount + append], capture_output=True, text=True
            )
            elapsed = time.perf_counter() - started
            if done.returncode != 0:
                lines.append(f"overlay in a user namespace: not available here ({done.stderr})")
                break
            what = "set-up alone" if name == "none" else f"set-up + one line appended to {name}"
            lines.append(f"overlay: {what}: {elapsed * 1000:.0f} ms")
        from quickdev.limits.journal.backup import _reflink

        started = time.perf_counter()
        cloned = _reflink(str(lower / "big.log"), root / "clone.log")
        elapsed = time.perf_counter() - started
        fs = subprocess.run(["stat", "-f", "-c", "%T", str(root)], capture_output=True, text=True)
        kind = fs.stdout.strip() or "?"
        lines.append(
            f"reflink clone of {size_mb} MB on {kind}: {elapsed * 1000:.1f} ms"
            if cloned
            else f"reflink clone: not supported by this file system ({kind})"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=6)
    parser.add_argument("--checkpoint-mb", type=int, default=1024)
    parser.add_argument("--append-mb", type=int, default=1024)
    args = parser.parse_args()
    counted = _adopt_orphans()
    # Bytecode as an installed package has it (pip compiles it): a checkout run under
    # PYTHONDONTWRITEBYTECODE would compile quickdev's modules in every job, the journal's
    # only where it is on, and that is not what the journal costs a user.
    compileall.compile_dir(str(PACKAGE_DIR), quiet=1)
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    cost = run_cost(args.repeat)
    print(
        f"CPU time counted for every process of the jobs: {'yes' if counted else 'NO'} "
        f"({orphans} left running by their job, reaped here); load average now "
        f"{os.getloadavg()[0]:.2f}"
    )
    elapsed, used, renamed = checkpoint_backup(args.checkpoint_mb)
    how = "a rename (same inode)" if renamed else "NOT a rename"
    print(
        f"{args.checkpoint_mb} MB checkpoint overwritten: backup took {elapsed * 1000:.2f} ms, "
        f"{used / 1e6:.1f} MB of disk, {how}"
    )
    no_copy = renamed and used < size_mb_bytes(args.checkpoint_mb) // 10
    appends, copy_s = append_cost(args.append_mb, max(3, args.repeat // 2))
    for fs, (big, small, cpu_big, cpu_small) in appends.items():
        print(
            f"one line appended in a job, runs dir on {fs}: {args.append_mb} MB log {big:.2f} s, "
            f"1 KB log {small:.2f} s ({big / small:.3f}); CPU {cpu_big:.2f} s vs "
            f"{cpu_small:.2f} s ({cpu_big / cpu_small:.3f})"
        )
    print(f"a copy of the {args.append_mb} MB log would add {copy_s:.2f} s")
    from quickdev.limits.journal.manifest import MAX_FILES

    print(f"start manifest of {MAX_FILES} files: {manifest_cost(MAX_FILES) * 1000:.0f} ms")
    for line in copy_on_write(args.append_mb):
        print(line)
    print(f"backup of an overwritten checkpoint without a copy: {no_copy}")
    for fs, (wall, cpu) in cost.items():
        big, small, cpu_big, cpu_small = appends[fs]
        print(
            f"runs dir on {fs}: journal cost worst CPU ratio {cpu:.3f}, wall {wall:.3f} "
            f"(goal <= 1.02); {args.append_mb} MB append / 1 KB: CPU {cpu_big / cpu_small:.3f}, "
            f"wall {big / small:.3f} (goal <= 1.1)"
        )


if __name__ == "__main__":
    main()
