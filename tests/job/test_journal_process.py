"""The job's journal process, through ``quickdev run`` as a person runs it: it serves until the
job has put the files back, through a terminal's Ctrl+C; it ends by itself when the job is
killed, and the next command puts the files back; a job started inside a process that was
already running (the in-process API) starts one of its own, and is put back the same way."""

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
from quickdev.limits.journal import interposer
from quickdev.processes import PACKAGE_DIR

from tests.limits.journal.test_writers import snapshot

# A Python write and a C library write, then batches until it is stopped; "written" once the
# first batch is in hand (a signal during the job's fork at that batch: test_signals.py).
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
loader = DataLoader(torch.arange(100.0), batch_size=10)
said = False
while True:
    for batch in loader:
        if not said:  # once the job's own check of the loader's first step is done
            print("written", flush=True)
            said = True
        time.sleep(0.05)
"""


# As a script that saves its weights however its loop ends.
WRITES_THEN_TRAINS_THEN_SAVES = (
    "try:\n"
    + "".join(f"    {line}\n" for line in WRITES_THEN_TRAINS.strip().splitlines())
    + "finally:\n"
    + "    with open('model.pt', 'wb') as f:\n"
    + "        f.write(b'the weights of the stopped job')\n"
    + "    print('saved on the way out', flush=True)\n"
)


def _library() -> str:
    built = interposer.build()
    if built.library is None:
        pytest.skip(f"the file interposer cannot be built here: {built.why_not}")
    return built.library


def _project(root: Path, script: str = WRITES_THEN_TRAINS) -> dict[str, str]:
    root.mkdir()
    (root / "model.pt").write_bytes(b"the user's weights")
    (root / "train.log").write_text("epoch 1\n")
    (root / "job.py").write_text(script)
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


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "stop"])
def test_a_signal_to_the_jobs_group_puts_every_change_back(
    tmp_path: Path, processes: list[subprocess.Popen[bytes]], sig: signal.Signals
) -> None:
    # Ctrl+C in a terminal, and the editor's Stop (SIGTERM), reach every process of the
    # job's group: the journal process too, which once died of them. Then the job's restore
    # failed on its closed socket (Ctrl+C), or the script's save on its way out was refused.
    _library()
    root = tmp_path / "project"
    before = _project(root, WRITES_THEN_TRAINS_THEN_SAVES)
    proc = _start(root, processes)
    os.killpg(proc.pid, sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, stderr.decode()
    assert b"saved on the way out" in stdout, stderr.decode()
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


def _run_in_process_interposed(root: Path, library: str, **env: str) -> None:
    """``IN_PROCESS`` in ``root``, in a process with the interposer loaded and ``env`` set;
    the job passed with the interposer's journal."""
    environ = {**os.environ, "LD_PRELOAD": library, interposer.TRIED_ENV: library, **env}
    proc = subprocess.run(
        [sys.executable, "-c", IN_PROCESS], cwd=root, env=environ, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith(f"passed {interposer.INTERPOSED}"), proc.stdout


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
    _run_in_process_interposed(root, library)
    assert snapshot(root) == before


def test_the_in_process_journal_process_writes_no_bytecode_where_the_job_would_not(
    tmp_path: Path,
) -> None:
    # A new interpreter started with -I leaves PYTHONDONTWRITEBYTECODE out: it once wrote
    # quickdev/__pycache__ into the package it ran from, a folder the warm process watches.
    library = _library()
    packages = tmp_path / "packages"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(PACKAGE_DIR, packages / PACKAGE_DIR.name, ignore=ignore)
    root = tmp_path / "project"
    root.mkdir()
    (root / "job.py").write_text(WRITES_THEN_TRAINS.split("loader =")[0])
    _run_in_process_interposed(root, library, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(packages))
    assert [str(p) for p in packages.rglob("__pycache__")] == []
