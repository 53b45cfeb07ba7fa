"""The journal with its runs directory on another file system than the user's files (/dev/shm):
an original is copied where a rename cannot move it, and a process killed at any step, while
the job changes the files or while it puts them back, leaves every original for the next
command to restore. Folders come back with their modes and times."""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from quickdev.limits.journal import interposer
from quickdev.limits.journal.recover import recover

from tests.support.filesystems import other_file_system

# The job: each kind of change, then the journal's restore. Every call that changes the
# file system (in the script, the journal and the restore) is counted, and the process
# dies (os._exit, as a SIGKILL would leave it: nothing flushed, no handler run) before
# the call numbered KILL_AT.
JOB = """
import os, shutil, sys
from pathlib import Path

KILL_AT = int(sys.argv[2])
calls = 0

def counted(real):
    def call(*args, **kwargs):
        global calls
        calls += 1
        if calls == KILL_AT:
            os._exit(9)
        return real(*args, **kwargs)
    return call

for name in ("replace", "rename", "unlink", "link", "truncate", "utime", "chmod", "mkdir",
             "rmdir", "symlink", "mknod"):
    setattr(os, name, counted(getattr(os, name)))

from quickdev.limits import journal
from quickdev.limits.patching import Patcher
from quickdev.rundir.ids import create_run_dir

run_dir = create_run_dir(Path(sys.argv[1]), "run-1")
patcher = Patcher()
session = journal.install(patcher, run_dir)
Path("model.pt").write_bytes(b"the job's model")
with open("logs/train.log", "a") as f:
    f.write("job line\\n")
with open("notes.txt", "r+") as f:
    f.write("JOB")
os.remove("data.csv")
Path("new.txt").write_text("new")
shutil.rmtree("private")
os.makedirs("private/inner")
Path("private/inner/secret.txt").write_text("the job's")
assert Path("model.pt").read_bytes() == b"the job's model"
patcher.undo_all()
done = session.finish()
assert not done.problems, done.problems
print("changes", calls, flush=True)
"""


def make_tree(root: Path) -> None:
    files = {
        "model.pt": b"a week of training" * 100,
        "logs/train.log": b"epoch 1 loss 0.5\n",
        "notes.txt": b"keep me",
        "data.csv": b"x,y\n1,2\n",
        "private/inner/secret.txt": b"secret",
        "private/key.txt": b"key",
    }
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    os.chmod(root / "private" / "inner", 0o700)
    os.chmod(root / "private", 0o750)
    os.chmod(root / "notes.txt", 0o600)
    # Distinct times, so that a folder or file given the wrong ones is seen.
    for i, path in enumerate(sorted(root.rglob("*"), key=lambda p: -len(p.parts))):
        os.utime(path, ns=(1_600_000_000_000_000_000 + i, 1_500_000_000_000_000_000 + i))
    os.utime(root, ns=(1_600_000_000_000_000_000, 1_500_000_000_000_000_000))


def state(root: Path) -> dict[str, tuple[str, int, int]]:
    """Each file's bytes, mode and modification time; each folder's mode and time."""
    found = {}
    for path in [root, *sorted(root.rglob("*"))]:
        relative = path.relative_to(root).as_posix()
        st = path.lstat()
        content = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
        found[relative] = (content, st.st_mode, st.st_mtime_ns)
    return found


def run_job(root: Path, runs: Path, kill_at: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", JOB, str(runs), str(kill_at)],
        cwd=root, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture
def other_fs(tmp_path: Path) -> Iterator[Path]:
    folder = other_file_system(tmp_path)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_runs_dir_on_another_file_system_restores_every_change(
    tmp_path: Path, other_fs: Path
) -> None:
    root = tmp_path / "project"
    make_tree(root)
    before = state(root)
    job = run_job(root, other_fs / "runs", 0)
    assert job.returncode == 0, job.stderr
    assert state(root) == before
    outputs = other_fs / "runs" / "run-1" / "outputs"
    assert (outputs / "model.pt").read_bytes() == b"the job's model"
    assert (outputs / "private" / "inner" / "secret.txt").read_text() == "the job's"


def test_a_kill_at_any_step_leaves_the_originals_for_the_next_command(
    tmp_path: Path, other_fs: Path
) -> None:
    root = tmp_path / "project"
    for kill_at in itertools.count(1):
        make_tree(root)
        before = state(root)
        runs = other_fs / f"runs-{kill_at}"
        job = run_job(root, runs, kill_at)
        if job.returncode == 0:  # past the last change: the job ran to its end
            assert kill_at > 40, "the job and its restore change the tree step by step"
            assert state(root) == before
            break
        assert job.returncode == 9, (kill_at, job.stderr)
        lines = recover(runs)
        assert state(root) == before, (kill_at, lines)
        assert not any("could not" in line for line in lines), lines
        shutil.rmtree(root)
        shutil.rmtree(runs, ignore_errors=True)


HOLD = """
import subprocess, time
from pathlib import Path
Path("model.pt").write_bytes(b"half a checkpoint")
subprocess.run("cp model.pt copy.pt && echo more >> logs/train.log", shell=True, check=True)
print("holding", flush=True)
time.sleep(120)
"""


def test_a_killed_job_with_its_runs_dir_elsewhere_is_put_back_by_the_next_command(
    run_quickdev: Any, tmp_path: Path, other_fs: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    # Through quickdev run, as a person runs it: interposed where the machine can build it,
    # with a program that is not Python among the writers (named where it cannot).
    root = tmp_path / "project"
    make_tree(root)
    (root / "hold.py").write_text(HOLD)
    (root / "noop.py").write_text("print('hello')\n")
    before = state(root)
    runs = other_fs / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "quickdev", "run", "--runs-dir", str(runs), "hold.py"],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    processes.append(proc)
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    while b"holding" not in proc.stdout.readline():
        assert time.monotonic() < deadline and proc.poll() is None
    assert (root / "copy.pt").exists()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    run = run_quickdev("--runs-dir", str(runs), "noop.py", cwd=root)
    assert run.returncode == 0, run.stderr
    (line,) = [line for line in run.stderr.splitlines() if "put back" in line]
    assert "killed run" in line, line
    if interposer.build().library is not None:
        assert "not put back" not in line, line
        assert state(root) == before
        return
    # No C compiler: the Python-level journal puts back model.pt; cp's copy and the shell's
    # append are changes it does not follow, named and left as they are.
    assert "not put back (no copy was kept): " in line, line
    assert "copy.pt" in line and "train.log" in line, line
    after = state(root)
    assert after["model.pt"] == before["model.pt"]
    assert after["notes.txt"] == before["notes.txt"]
