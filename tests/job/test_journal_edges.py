"""Edge cases of the file journal, through ``quickdev run``: ``dir_fd`` opens, mode and time
changes, a direct system call adding a file to a folder (no journal sees it: named), a
thread still writing after the job."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from quickdev.limits.journal import LATE_THREAD_GRACE_S

from tests.limits.journal import writers
from tests.limits.journal.test_writers import snapshot

EDGES = """
import ctypes, os, threading, time
from pathlib import Path

# A write relative to a folder's descriptor: the event names no folder.
logs = os.open("logs", os.O_RDONLY)
fd = os.open("train.log", os.O_WRONLY | os.O_TRUNC, dir_fd=logs)
os.write(fd, b"rewritten")
os.close(fd)
os.close(logs)
assert Path("logs/train.log").read_bytes() == b"rewritten"

# Mode and times.
os.chmod("notes.txt", 0o600)
os.utime("model.pt", (0, 0))
assert os.stat("model.pt").st_mtime == 0

# A direct system call (no C library function, no audit event, no registry entry): a new
# file in a folder the script read from. Nothing tells it from a file the person makes
# there, so it stays, named.
assert Path("checkpoints/last.ckpt").read_bytes()
libc = ctypes.CDLL(None, use_errno=True)
openat = {"x86_64": 257, "aarch64": 56}[os.uname().machine]
fd = libc.syscall(openat, -100, b"checkpoints/native.h5", os.O_WRONLY | os.O_CREAT, 0o644)
assert fd >= 0, ctypes.get_errno()
os.close(fd)
assert Path("checkpoints/native.h5").exists()

# A thread that goes on writing past the grace the job gives it.
def late():
    time.sleep(float(os.environ["LATE_AFTER_S"]))
    try:
        Path("late.txt").write_text("too late")
    except PermissionError as exc:  # as the system refuses it; the reason is on stderr
        Path(os.environ["LATE_REPORT"]).write_text(f"refused: errno {exc.errno}")

threading.Thread(target=late, name="late-writer").start()
# A library's daemon thread that writes nothing (as tqdm's monitor): nothing to say about it.
threading.Thread(target=time.sleep, args=(60,), name="idle-daemon", daemon=True).start()
print("read its own writes")
"""


def test_edge_writes_are_restored_and_late_threads_refused(
    run_quickdev: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    writers.make_user_tree(root)
    shutil.copy(writers.__file__, root / "writers.py")
    (root / "edges.py").write_text(EDGES)
    os.chmod(root / "notes.txt", 0o644)
    stat_before = {name: os.stat(root / name) for name in ("notes.txt", "model.pt")}
    before = snapshot(root)
    report = tmp_path / "late-report.txt"
    monkeypatch.setenv("LATE_REPORT", str(report))
    monkeypatch.setenv("LATE_AFTER_S", str(LATE_THREAD_GRACE_S + 1))
    run = run_quickdev("edges.py", cwd=root)
    assert run.returncode == 0, run.stderr
    assert run.result["status"] == "passed", run.result.get("error")
    native = root / "checkpoints" / "native.h5"
    assert snapshot(root) == {**before, "checkpoints/native.h5": snapshot(root)[
        "checkpoints/native.h5"]}  # fmt: skip
    (unseen,) = run.result["file_safety"]["not_restored"]
    assert (unseen["path"], unseen["change"]) == (str(native), "created")
    notes, model = (os.stat(root / name) for name in ("notes.txt", "model.pt"))
    assert notes.st_mode == stat_before["notes.txt"].st_mode
    assert model.st_mtime_ns == stat_before["model.pt"].st_mtime_ns
    kept = {Path(o["requested"]).relative_to(root).as_posix() for o in run.result["outputs"]}
    assert "logs/train.log" in kept
    assert (run.run_dir / "outputs" / "logs" / "train.log").read_bytes() == b"rewritten"
    # The refusal is said once, naming the thread and the file, even where the thread
    # swallows the error; threads that write nothing (the idle daemon, Quickdev's own
    # sampler) are not named.
    refusal = f"{root / 'late.txt'} is restored; thread 'late-writer' may not change it"
    assert run.stderr.count(refusal) == 1, run.stderr
    assert "idle-daemon" not in run.stderr and "quickdev-sampler" not in run.stderr
    assert not (root / "late.txt").exists()
    assert report.read_text() == "refused: errno 1"  # EPERM
