"""Out of space, on real small file systems (a tmpfs mounted for the test; skipped with the
reason where mounts are refused): a change whose original cannot be kept is refused to the
script as the system refuses a write on a full disk (ENOSPC), and the file is left as it
was; a killed job's files are put back by the next command on a full disk, which says so."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.limits.journal.test_writers import snapshot
from tests.support.filesystems import fill, mounted_tmpfs

REFUSED = """
import errno
from pathlib import Path
for mode in ("r+b", "wb"):
    try:
        with open("model.bin", mode) as f:
            f.write(b"the job's")
    except OSError as exc:
        print(mode, "refused", errno.errorcode.get(exc.errno), "|", exc, flush=True)
    else:
        print(mode, "allowed", flush=True)
assert Path("model.bin").read_bytes()[:9] != b"the job's"
with open("train.log", "a") as f:  # an append keeps no copy: it needs no room
    f.write("epoch 2\\n")
print("done", flush=True)
"""


@pytest.fixture
def small_runs_fs(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "runs-fs", "2m") as where:
        yield where


def test_a_change_whose_original_cannot_be_kept_is_refused_as_enospc(
    run_quickdev: object, tmp_path: Path, small_runs_fs: Path
) -> None:
    # The runs dir on a nearly full file system of its own: the original of a file changed
    # in place, or overwritten (a copy: no rename crosses file systems), has no room there.
    root = tmp_path / "project"
    root.mkdir()
    (root / "model.bin").write_bytes(os.urandom(600_000))
    (root / "train.log").write_text("epoch 1\n")
    (root / "job.py").write_text(REFUSED)
    before = snapshot(root)
    runs = small_runs_fs / "runs"
    runs.mkdir()
    fill(small_runs_fs, leave=300_000)  # room for the run's own files, not for the copy
    run = run_quickdev("--runs-dir", str(runs), "job.py", cwd=root)  # type: ignore[operator]
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    for mode in ("r+b", "wb"):
        (line,) = [line for line in lines if line.startswith(mode + " ")]
        assert line.startswith(f"{mode} refused ENOSPC | "), line
    # Why, in one line: in the exception (the Python-level journal) or, where the system's
    # own refusal is all a process can be given (interposed), on the job's stderr.
    said = run.stdout + run.stderr
    assert (
        f"quickdev: cannot keep a copy of {root / 'model.bin'} before the job changes it " in said
    )
    assert "(No space left on device); the file was left as it was" in said
    assert "done" in lines
    assert snapshot(root) == before
    assert run.result["status"] == "passed"


# Once the disk is full the script says so through a file elsewhere (its output would
# need room too).
FILL_THEN_HOLD = """
import sys, time
from pathlib import Path
with open("model.bin", "wb") as f:  # the original moves aside by a rename: no room needed
    try:
        for _ in range(40):
            f.write(b"x" * (1 << 20))
            f.flush()
    except OSError as exc:
        Path(sys.argv[1]).write_text(exc.strerror)
    time.sleep(120)
"""


def test_the_next_command_puts_files_back_on_a_full_disk_and_says_so(
    tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    with mounted_tmpfs(tmp_path / "project", "24m") as root:
        (root / "model.bin").write_bytes(os.urandom(10 << 20))
        (root / "fill.py").write_text(FILL_THEN_HOLD)
        before = snapshot(root)
        full = tmp_path / "full.txt"
        proc = subprocess.Popen(
            [sys.executable, "-m", "quickdev", "run", "fill.py", "--", str(full)],
            cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        processes.append(proc)
        deadline = time.monotonic() + 120
        while not full.exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        assert full.read_text() == "No space left on device", "the job filled the disk"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        stats = os.statvfs(root)
        assert stats.f_bavail * stats.f_frsize < 64 << 10, "still full"
        prune = subprocess.run(
            [sys.executable, "-m", "quickdev", "runs", "prune"],
            cwd=root, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert prune.returncode == 0, prune.stderr
        assert "Traceback" not in prune.stderr, prune.stderr
        (line,) = [line for line in prune.stderr.splitlines() if "put back" in line]
        assert line.startswith("quickdev: put back 1 file(s) that the killed run "), line
        assert "could not be restored" not in line and "not put back" not in line, line
        assert snapshot(root) == before
        (run_dir,) = [d for d in (root / ".quickdev" / "runs").iterdir() if d.is_dir()]
        assert (run_dir / "journal.done.log").exists(), "finished: no later command redoes it"
