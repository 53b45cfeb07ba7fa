"""A full disk at the job's end: the person's files are put back first, whatever fails to
be written after; one line says what, never a traceback. (Recovery on a full disk, and a
change refused for want of room for its original: tests/job/test_journal_full_disk.py.)

Real small file systems (a tmpfs); each test skips with the reason where mounts are refused.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.filesystems import mounted_tmpfs

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
