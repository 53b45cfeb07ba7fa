"""The file interposer against the Python-level journal and its registry of native writers,
measured side by side in one run (QUICKDEV_NO_INTERPOSER=1 switches the interposer off).

1. What each covers: one job changing the user's files through every kind of writer
   (Python, torch's C++ export writer, OpenCV's VideoWriter, C's fopen and mkstemp, cp, a
   shell's >>, a direct system call); for each writer, whether the folder came back
   byte-identical (put back), the change was only named (not put back), or neither.
2. What a change costs: a job making N changes of one kind (new files, overwrites,
   appends by reopening, SQLite commits), timed inside the script, per change, with the
   interposer, with the Python-level journal, and with no journal (--keep-outputs).
3. What it adds to a whole run: ``quickdev run`` on examples/train_loop.py and
   examples/save_model.py, interposed / Python-level / no journal, interleaved, medians of
   wall and CPU (the re-execution that preloads the interposer included).

    python benchmarks/interposer.py [--repeat N] [--changes N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from quickdev.limits.journal import interposer

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MODES = {
    "interposed": {},
    "python-level": {interposer.OFF_ENV: "1"},
}

# Each writer changes one file of the user's (or makes one); the job prints nothing else.
WRITERS = {
    "python open": "Path('python.txt').write_text('job')",
    "torch.jit save": (
        "import torch\ntorch.jit.trace(torch.nn.Linear(2, 2), torch.ones(1, 2)).save('export.pt')"
    ),
    "OpenCV VideoWriter": (
        "import cv2, numpy as np\n"
        "v = cv2.VideoWriter('clip.avi', cv2.VideoWriter_fourcc(*'MJPG'), 5, (8, 8))\n"
        "v.write(np.zeros((8, 8, 3), np.uint8)); v.release()"
    ),
    "C fopen (append)": (
        "libc.fopen.restype = ctypes.c_void_p\n"
        "libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]\n"
        "libc.fclose.argtypes = [ctypes.c_void_p]\n"
        "f = libc.fopen(b'fopen.log', b'a'); libc.fputs(b'job\\n', ctypes.c_void_p(f)); "
        "libc.fclose(f)"
    ),
    "C mkstemp + rename": (
        "t = ctypes.create_string_buffer(b'mkstemp.txt.XXXXXX'); fd = libc.mkstemp(t)\n"
        "os.write(fd, b'job'); os.close(fd); os.rename(t.value.decode(), 'mkstemp.txt')"
    ),
    "cp": "subprocess.run(['cp', 'python.txt', 'cp.txt'], check=True)",
    "sh >>": "subprocess.run(['sh', '-c', 'echo job >> shell.log'], check=True)",
    "direct system call": (
        "n = {'x86_64': 257, 'aarch64': 56}[os.uname().machine]\n"
        "fd = libc.syscall(n, -100, b'syscall.txt', os.O_WRONLY | os.O_TRUNC, 0)\n"
        "os.write(fd, b'job'); os.close(fd)"
    ),
}
FILES = ["python.txt", "export.pt", "clip.avi", "fopen.log", "mkstemp.txt", "cp.txt",
         "shell.log", "syscall.txt"]  # fmt: skip


def _tree(root: Path) -> None:
    for name in FILES:
        if name != "cp.txt":  # cp makes a new one
            (root / name).write_bytes(f"the user's {name}\n".encode())


def _snapshot(root: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in root.iterdir() if p.is_file()
    }


def coverage() -> dict[str, dict[str, str]]:
    """writer -> mode -> "put back" | "named" | "missed"."""
    found: dict[str, dict[str, str]] = {name: {} for name in WRITERS}
    for mode, env in MODES.items():
        with tempfile.TemporaryDirectory(prefix="quickdev-interposer-") as tmp:
            root = Path(tmp)
            _tree(root)
            before = _snapshot(root)
            body = "\n".join(f"# {name}\n{code}" for name, code in WRITERS.items())
            script = (
                "import ctypes, os, subprocess\nfrom pathlib import Path\n"
                "libc = ctypes.CDLL(None)\n" + body + "\n"
            )
            (root / "writers.py").write_text(script)
            before["writers.py"] = _snapshot(root)["writers.py"]
            command = [sys.executable, "-m", "quickdev", "run", "--json", "writers.py"]
            proc = subprocess.run(
                command, cwd=root, capture_output=True, text=True, env={**os.environ, **env}
            )
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            named = {Path(c["path"]).name for c in result["file_safety"]["not_restored"]}
            after = _snapshot(root)
            for writer, name in zip(WRITERS, FILES, strict=True):
                if after.get(name) == before.get(name):
                    found[writer][mode] = "put back"
                elif name in named:
                    found[writer][mode] = "named"
                else:
                    found[writer][mode] = "missed"
    return found


CHANGES = {
    "new file": "Path(f'new-{i}.txt').write_text('x')",
    "overwrite": "Path('same.txt').write_text(str(i))",
    "append (reopen)": "open('log.txt', 'a').write('line\\n')",
    "SQLite commit": "db.execute('INSERT INTO t VALUES (?)', (i,)); db.commit()",
}


def change_cost(changes: int, repeat: int) -> dict[str, dict[str, float]]:
    """kind -> mode -> median µs per change, timed in the script."""
    modes = {**MODES, "no journal": {}}
    per: dict[str, dict[str, list[float]]] = {k: {m: [] for m in modes} for k in CHANGES}
    for _ in range(repeat):
        for kind, code in CHANGES.items():
            for mode, env in modes.items():
                with tempfile.TemporaryDirectory(prefix="quickdev-changes-") as tmp:
                    root = Path(tmp)
                    (root / "same.txt").write_text("the user's")
                    (root / "log.txt").write_text("the user's log\n")
                    script = (
                        "import sqlite3, time\nfrom pathlib import Path\n"
                        "db = sqlite3.connect('metrics.db'); db.execute('CREATE TABLE t (x)')\n"
                        f"start = time.perf_counter()\nfor i in range({changes}):\n    {code}\n"
                        f"print('per change', (time.perf_counter() - start) / {changes})\n"
                    )
                    (root / "changes.py").write_text(script)
                    flags = ["--keep-outputs"] if mode == "no journal" else []
                    proc = subprocess.run(
                        [sys.executable, "-m", "quickdev", "run", *flags, "changes.py"],
                        cwd=root, capture_output=True, text=True, env={**os.environ, **env},
                    )  # fmt: skip
                    line = next(x for x in proc.stdout.splitlines() if x.startswith("per change"))
                    per[kind][mode].append(float(line.split()[-1]) * 1e6)
    return {k: {m: statistics.median(v) for m, v in by.items()} for k, by in per.items()}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cost(repeat: int) -> dict[str, dict[str, tuple[float, float]]]:
    """script -> mode -> (median wall, median CPU) of a whole quickdev run."""
    modes = {**MODES, "no journal": {}}
    scripts = {"train_loop": EXAMPLES / "train_loop.py", "save_model": EXAMPLES / "save_model.py"}
    walls: dict[tuple[str, str], list[float]] = {}
    cpus: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="quickdev-runs-") as tmp:
        cwd = Path(tmp)
        variants = [(s, m) for s in scripts for m in modes]
        for rep in range(repeat + 1):
            for script, mode in variants[rep % len(variants) :] + variants[: rep % len(variants)]:
                (cwd / "model.pt").write_bytes(b"the user's model" * 1000)
                flags = ["--keep-outputs"] if mode == "no journal" else []
                command = [sys.executable, "-m", "quickdev", "run", *flags, str(scripts[script])]
                cpu, started = _cpu(), time.perf_counter()
                subprocess.run(
                    command, cwd=cwd, capture_output=True, check=True,
                    env={**os.environ, **modes[mode]},
                )  # fmt: skip
                if rep:  # the first round warms the caches (and builds the interposer)
                    walls.setdefault((script, mode), []).append(time.perf_counter() - started)
                    cpus.setdefault((script, mode), []).append(_cpu() - cpu)
    return {
        s: {m: (statistics.median(walls[s, m]), statistics.median(cpus[s, m])) for m in modes}
        for s in scripts
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--changes", type=int, default=200)
    args = parser.parse_args()
    built = interposer.build()
    if built.library is None:
        print(f"no interposer here ({built.why_not}): nothing to compare")
        return
    print("1. what each covers (the folder after the job):")
    found = coverage()
    print(f"   {'writer':22s} {'interposed':12s} python-level")
    for writer, covers in found.items():
        print(f"   {writer:22s} {covers['interposed']:12s} {covers['python-level']}")
    print(f"2. per change, µs (median of {args.repeat}, {args.changes} changes a job):")
    costs = change_cost(args.changes, args.repeat)
    print(f"   {'change':18s} {'interposed':>11s} {'python-level':>13s} {'no journal':>11s}")
    for kind, cost in costs.items():
        print(f"   {kind:18s} {cost['interposed']:11.0f} {cost['python-level']:13.0f} "
              f"{cost['no journal']:11.0f}")  # fmt: skip
    print(f"3. a whole run, median of {args.repeat} (wall s / CPU s):")
    runs = run_cost(args.repeat)
    worst = {"interposed": 0.0, "python-level": 0.0}
    for script, by in runs.items():
        off_wall, off_cpu = by["no journal"]
        cells = []
        for mode in MODES:
            wall, cpu = by[mode]
            worst[mode] = max(worst[mode], cpu / off_cpu)
            cells.append(
                f"{mode} {wall:.2f}/{cpu:.2f} ({wall / off_wall:.3f}, {cpu / off_cpu:.3f})"
            )
        print(f"   {script}: " + "; ".join(cells) + f"; no journal {off_wall:.2f}/{off_cpu:.2f}")
    covered = sum(c["interposed"] == "put back" for c in found.values())
    python_covered = sum(c["python-level"] == "put back" for c in found.values())
    print(
        f"interposer: {covered}/{len(found)} writers put back (python-level: {python_covered}); "
        f"worst CPU ratio to no journal: interposed {worst['interposed']:.3f}, "
        f"python-level {worst['python-level']:.3f}"
    )


if __name__ == "__main__":
    main()
