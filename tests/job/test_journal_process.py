"""The job's journal process, through ``quickdev run`` as a person runs it: it serves until the
job has put the files back, through a terminal's Ctrl+C; it ends by itself when the job is
killed, and the next command puts the files back; a job started inside a process that was
already running (the in-process API) starts one of its own, and is put back the same way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from quickdev.limits.journal import interposer

from tests.limits.journal.test_writers import snapshot

# A Python write and a C library write, then batches until it is stopped.
WRITES_THEN_TRAINS = """
import ctypes, time
import torch
from torch.utils.data import DataLoader

with open("model.pt", "wb") as f:
    f.write(b"the job's weights")
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.fputs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
stream = libc.fopen(b"train.log", b"a")
libc.fputs(b"native line\\n", stream)
libc.fclose(stream)
print("written", flush=True)
loader = DataLoader(torch.arange(100.0), batch_size=10)
while True:
    for batch in loader:
        time.sleep(0.05)
"""


def _library() -> str:
    built = interposer.build()
    if built.library is None:
        pytest.skip(f"the file interposer cannot be built here: {built.why_not}")
    return built.library


def _project(root: Path) -> dict[str, str]:
    root.mkdir()
    (root / "model.pt").write_bytes(b"the user's weights")
    (root / "train.log").write_text("epoch 1\n")
    (root / "job.py").write_text(WRITES_THEN_TRAINS)
    return snapshot(root)


def _start(root: Path, processes: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """The job in a process group of its own, as a terminal's foreground job is; returns
    once the script has made its changes."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "quickdev", "run", "--batches", "1000000", "job.py"],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    processes.append(proc)
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    while b"written" not in proc.stdout.readline():
        assert time.monotonic() < deadline and proc.poll() is None, "the script never wrote"
    assert (root / "model.pt").read_bytes() == b"the job's weights"
    return proc


def _group_gone(pgid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_ctrl_c_in_a_terminal_puts_every_change_back(
    tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    # Ctrl+C reaches every process of the terminal's foreground group: the journal process
    # too, which once died of it, and the job's restore then failed on its closed socket.
    _library()
    root = tmp_path / "project"
    before = _project(root)
    proc = _start(root, processes)
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, stderr.decode()
    assert snapshot(root) == before
    assert b"Traceback" not in stderr, stderr.decode()
    assert b"changed model.pt: put back" in stderr, stderr.decode()
    assert _group_gone(proc.pid, 10), "a process of the job outlived it"


def test_a_job_killed_alone_leaves_no_process_and_the_next_command_puts_back(
    run_quickdev: Any, tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    # SIGKILL of the job's process only: its journal process has already kept each original
    # on disk, and ends by itself once the job is gone.
    _library()
    root = tmp_path / "project"
    before = _project(root)
    (root / "noop.py").write_text("print('hello')\n")  # the next command's script
    proc = _start(root, processes)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert _group_gone(proc.pid, 10), "the journal process outlived the job"
    run = run_quickdev("noop.py", cwd=root)
    assert run.returncode == 0, run.stderr
    (line,) = [line for line in run.stderr.splitlines() if "killed run" in line]
    assert "not put back" not in line, line
    (root / "noop.py").unlink()
    assert snapshot(root) == before


IN_PROCESS = """
import quickdev
result = quickdev.run("job.py", runs_dir=".quickdev/runs")
print(result.status, result.file_safety.writers)
"""


def test_the_in_process_api_in_an_interposed_process_starts_a_journal_process(
    tmp_path: Path,
) -> None:
    library = _library()
    root = tmp_path / "project"
    root.mkdir()
    (root / "model.pt").write_bytes(b"the user's weights")
    (root / "train.log").write_text("epoch 1\n")
    (root / "job.py").write_text(WRITES_THEN_TRAINS.split("loader =")[0])
    before = snapshot(root)
    env = {**os.environ, "LD_PRELOAD": library, interposer.TRIED_ENV: library}
    proc = subprocess.run(
        [sys.executable, "-c", IN_PROCESS], cwd=root, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith(f"passed {interposer.INTERPOSED}"), proc.stdout
    assert snapshot(root) == before
