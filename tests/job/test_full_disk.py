"""A full disk at the job's end: the person's files are put back first, whatever fails to
be written after; one line says what, never a traceback; recovery on a full disk completes.

Real small file systems (a tmpfs); each test skips with the reason where mounts are refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from quickdev.rundir.layout import JOURNAL_DONE

from tests.support.filesystems import fill, mounted_tmpfs

MB = 1024 * 1024

OVERWRITE = """\
with open("model.bin", "wb") as f:
    for _ in range(15):
        f.write(b"\\0" * (1 << 20))
print("saved")
"""

PRINTS = """\
with open("model.bin", "wb") as f:
    f.write(b"new weights")
line = "x" * 1000
for i in range(25_000):
    print(line)
print("the script's last line")
"""

KILLED = """\
import os
with open("model.bin", "wb") as f:
    f.write(b"half a model")
os.kill(os.getpid(), 9)
"""


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A project folder on a 20 MB file system of its own (its runs dir inside)."""
    with mounted_tmpfs(tmp_path / "disk", "20m") as disk:
        project = disk / "project"
        project.mkdir()
        yield project


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def quickdev(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "quickdev", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )


def only_users_frames(stderr: str) -> None:
    assert "During handling" not in stderr, stderr
    frames = [line for line in stderr.splitlines() if line.strip().startswith('File "')]
    assert all("quickdev" not in frame for frame in frames), stderr


def test_a_disk_full_under_the_script_puts_the_model_back_in_one_line(small_disk: Path) -> None:
    """15 MB written over a 10 MB model on a 20 MB disk: the original is kept aside while
    the job runs, so the script's write fails (its own error, as Python prints it); the
    model is put back, and what the job could not write of its own is one line."""
    model = small_disk / "model.bin"
    model.write_bytes(os.urandom(10 * MB))
    before = digest(model)
    (small_disk / "train.py").write_text(OVERWRITE)
    done = quickdev(small_disk, "run", "train.py")
    assert done.returncode == 1, done.stderr
    assert digest(model) == before
    assert "OSError: [Errno 28] No space left on device" in done.stderr
    only_users_frames(done.stderr)
    assert "changed model.bin: put back" in done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("quickdev: could not write")]
    assert "No space left on device" in line, done.stderr


def test_a_runs_dir_that_fills_while_the_script_prints(small_disk: Path) -> None:
    """The script's output fills the disk (its copy in output.log): the script's prints go
    on, it passes, and its changed model is put back."""
    model = small_disk / "model.bin"
    model.write_bytes(os.urandom(2 * MB))
    before = digest(model)
    (small_disk / "train.py").write_text(PRINTS)
    done = quickdev(small_disk, "run", "train.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("the script's last line\n")
    assert digest(model) == before
    only_users_frames(done.stderr)
    assert "quickdev: passed" in done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("quickdev: could not write")]
    assert "output.log" in line, done.stderr


def test_prune_on_a_full_disk_puts_back_a_killed_runs_files_and_says_so(
    small_disk: Path,
) -> None:
    model = small_disk / "model.bin"
    model.write_bytes(os.urandom(2 * MB))
    before = digest(model)
    (small_disk / "train.py").write_text(KILLED)
    killed = quickdev(small_disk, "run", "train.py")
    assert killed.returncode == -9 or killed.returncode == 137, killed.stderr
    assert digest(model) != before  # the killed job left it changed
    fill(small_disk)
    done = quickdev(small_disk, "runs", "prune")
    assert done.returncode == 0, done.stderr
    assert digest(model) == before
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert any("put back 1 file(s)" in line for line in lines), done.stderr
    assert any(line.startswith("quickdev: removed") for line in lines), done.stderr
    # Finished: the next command has nothing left to put back.
    (run_dir,) = (p for p in (small_disk / ".quickdev" / "runs").iterdir() if p.is_dir())
    assert (run_dir / JOURNAL_DONE).is_file(), done.stderr
    again = quickdev(small_disk, "runs", "prune")
    assert "put back" not in again.stderr, again.stderr
    json.loads((run_dir / "result.json").read_text())  # still whole
