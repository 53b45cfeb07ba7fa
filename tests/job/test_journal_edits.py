"""The person's own edits win over the job's restore, and what no journal saw is named.

The person edits from outside the job while it runs (this test's process, in step with the
job through signal files): a file the job changed and the person then saved keeps the
person's text, as does a file the job deleted and the person made again; the originals go
to the run directory and the result says so in one line. The same after a kill. A change
made by a program that is not Python is named as not put back."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from quickdev.rundir.changes import changes
from quickdev.rundir.layout import JOURNAL_FILE
from quickdev.rundir.result import JobResult

from tests.limits.journal import writers
from tests.limits.journal.test_writers import snapshot

JOB = """
import os, sys, time
from pathlib import Path
signals = Path(sys.argv[1])
Path("notes.txt").write_text("the job's notes")
os.remove("model.pt")
Path("logs/train.log").write_text("the job's log")
(signals / "job-wrote").touch()
deadline = time.monotonic() + 60
while not (signals / "person-edited").exists():
    assert time.monotonic() < deadline
    time.sleep(0.02)
if len(sys.argv) > 2:
    print("holding", flush=True)
    time.sleep(120)
print("done")
"""


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "project"
    root.mkdir()
    writers.make_user_tree(root)
    (root / "job.py").write_text(JOB)
    (root / "noop.py").write_text("print('hello')\n")
    signals = tmp_path / "signals"
    signals.mkdir()
    return root, signals


def _wait_for(path: Path, proc: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + 90
    while not path.exists():
        assert time.monotonic() < deadline and proc.poll() is None, f"no {path.name}"
        time.sleep(0.02)


def _person_edits(root: Path) -> None:
    (root / "notes.txt").write_text("the person's notes")  # saved over the job's
    (root / "model.pt").write_bytes(b"the person's model")  # made again after the delete
    (root / "todo.txt").write_text("a new file of the person's")  # where the job wrote


def _start(root: Path, signals: Path, *extra: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "quickdev", "run", "--json", "job.py", "--", str(signals)]
    return subprocess.Popen(
        [*command, *extra], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip


def test_the_persons_edits_made_while_the_job_runs_are_kept(
    tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    import json

    root, signals = _tree(tmp_path)
    before = snapshot(root)
    proc = _start(root, signals)
    processes.append(proc)
    _wait_for(signals / "job-wrote", proc)
    _person_edits(root)
    (signals / "person-edited").touch()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    result = json.loads(out.decode().strip().splitlines()[-1])
    assert (root / "notes.txt").read_text() == "the person's notes"
    assert (root / "model.pt").read_bytes() == b"the person's model"
    # Everything else is as before: the log the job rewrote and nobody edited is back.
    assert (root / "todo.txt").read_text() == "a new file of the person's"
    theirs = ("notes.txt", "model.pt", "todo.txt")
    now = snapshot(root)
    assert {k: v for k, v in now.items() if k not in theirs} == {
        k: v for k, v in before.items() if k not in theirs
    }
    run_dir = Path(result["run_dir"])
    edits = {Path(e["path"]).name: e["original"] for e in result["file_safety"]["your_edits"]}
    assert set(edits) == {"notes.txt", "model.pt"}
    assert Path(edits["notes.txt"]).read_bytes() == writers.USER_FILES["notes.txt"]
    assert Path(edits["model.pt"]).read_bytes() == writers.USER_FILES["model.pt"]
    assert Path(edits["notes.txt"]).is_relative_to(run_dir / "originals")
    # One line, in the terminal's summary and the editor's message alike.
    (line,) = [line for line in changes(JobResult.from_dict(result)) if "your edits:" in line]
    assert "notes.txt" in line and "model.pt" in line and "originals" in line
    # The new file is the person's or an unknown writer's: left, and named.
    (new,) = result["file_safety"]["not_restored"]
    assert (new["path"], new["change"]) == (str(root / "todo.txt"), "created")


def test_after_a_kill_the_persons_edits_are_kept_too(
    run_quickdev: Any, tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    root, signals = _tree(tmp_path)
    proc = _start(root, signals, "hold")
    processes.append(proc)
    _wait_for(signals / "job-wrote", proc)
    _person_edits(root)
    (signals / "person-edited").touch()
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while b"holding" not in proc.stdout.readline():
        assert time.monotonic() < deadline and proc.poll() is None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    # And an edit made once the job is dead: the dead job's last heartbeat is moved back,
    # as if this came long after the kill.
    (killed,) = [p for p in (root / ".quickdev" / "runs").iterdir() if p.is_dir()]
    old = time.time() - 60
    os.utime(killed / JOURNAL_FILE, (old, old))
    (root / "logs" / "train.log").write_text("the person's log, after the kill")
    run = run_quickdev("noop.py", cwd=root)
    assert run.returncode == 0, run.stderr
    (line,) = [line for line in run.stderr.splitlines() if "killed run" in line]
    assert "kept your own edits" in line
    assert (root / "notes.txt").read_text() == "the person's notes"
    assert (root / "model.pt").read_bytes() == b"the person's model"
    assert (root / "logs" / "train.log").read_text() == "the person's log, after the kill"
    originals = killed / "originals"
    assert (originals / "notes.txt").read_bytes() == writers.USER_FILES["notes.txt"]
    assert (originals / "logs" / "train.log").read_bytes() == writers.USER_FILES["logs/train.log"]


# A direct system call: no C library function runs, so neither the interposer nor Python's
# audit hook sees it (a statically linked program, a Go binary, io_uring are alike).
NOT_SEEN = """
import ctypes, os
from pathlib import Path
number = {"x86_64": 257, "aarch64": 56}[os.uname().machine]  # openat
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(number, -100, b"notes.txt", os.O_WRONLY | os.O_APPEND, 0)
assert fd >= 0, ctypes.get_errno()
os.write(fd, b" and more")
os.close(fd)
Path("checkpoints/last.ckpt").write_bytes(b"journaled")
print("done")
"""


def test_a_change_no_journal_saw_is_named(run_quickdev: Any, tmp_path: Path) -> None:
    if os.uname().machine not in ("x86_64", "aarch64"):
        pytest.skip("the test's system call number is known for x86_64 and aarch64 only")
    root, _ = _tree(tmp_path)
    (root / "not_python.py").write_text(NOT_SEEN)
    run = run_quickdev("not_python.py", cwd=root, json_output=False)
    assert run.returncode == 0, run.stderr
    assert (root / "notes.txt").read_bytes() == writers.USER_FILES["notes.txt"] + b" and more"
    assert (root / "checkpoints" / "last.ckpt").read_bytes() == b"the last checkpoint"
    (line,) = [line for line in run.stderr.splitlines() if "not put back:" in line]
    assert "notes.txt" in line and "no copy was kept" in line
    json_run = run_quickdev("not_python.py", cwd=root)
    (unseen,) = json_run.result["file_safety"]["not_restored"]
    assert unseen["path"] == str(root / "notes.txt") and unseen["change"] == "changed"
    assert "not Python" in unseen["why"] or "not follow" in unseen["why"]


APPEND = """
from pathlib import Path
with open("big.log", "a") as f:
    f.write("one more line\\n")
assert Path("big.log").read_bytes().endswith(b"one more line\\n")
print("done")
"""


def test_an_append_to_a_big_file_copies_nothing(run_quickdev: Any, tmp_path: Path) -> None:
    root, _ = _tree(tmp_path)
    size = 64 * 1024 * 1024
    with open(root / "big.log", "wb") as f:
        f.truncate(size)  # sparse: its size is what a copy would pay for
    stat_before = os.stat(root / "big.log")
    (root / "append.py").write_text(APPEND)
    run = run_quickdev("append.py", cwd=root)
    assert run.returncode == 0, run.stderr
    after = os.stat(root / "big.log")
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        stat_before.st_size, stat_before.st_mtime_ns, stat_before.st_ino,
    )  # fmt: skip
    (output,) = [o for o in run.result["outputs"] if o["requested"].endswith("big.log")]
    assert output["change"] == "appended"
    assert Path(output["written"]).read_bytes() == b"one more line\n"
    backups = run.run_dir / "journal-backups"
    assert not backups.exists() or sum(p.stat().st_size for p in backups.iterdir()) < size
    shutil.rmtree(run.run_dir)
