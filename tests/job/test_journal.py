"""The file journal through ``quickdev run``: the user's folder is as it was after every job."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from quickdev.rundir.ids import create_run_dir

from tests.limits.journal import writers
from tests.limits.journal.test_writers import snapshot

GROUPS = {
    "open-numpy-tensorboard": [
        "open_w", "open_a", "open_x", "torch_save_file_object", "numpy_save", "makedirs",
        "summary_writer",
    ],
    "torch-atomic-safetensors-rmtree": [
        "torch_save_path", "atomic_save", "path_write", "rmtree_outputs", "safetensors_save",
    ],
    "update-remove": ["open_r_plus", "remove"],
    "rename": ["rename"],
}  # fmt: skip


def _user_tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    writers.make_user_tree(root)
    shutil.copy(writers.__file__, root / "writers.py")
    return root


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_writers_leave_the_folder_byte_identical(
    run_quickdev: Any, tmp_path: Path, group: str
) -> None:
    root = _user_tree(tmp_path)
    before = snapshot(root)
    run = run_quickdev("writers.py", "--", *GROUPS[group], cwd=root)
    assert run.returncode == 0, run.stderr
    assert run.result["status"] == "passed"
    assert "read its own writes" in run.stdout
    assert snapshot(root) == before
    outputs = run.result["outputs"]
    assert outputs
    for output in outputs:
        if output["written"] is not None:
            written = Path(output["written"])
            assert written.is_file() and written.is_relative_to(run.run_dir / "outputs")
            relative = Path(output["requested"]).relative_to(root)
            assert written == run.run_dir / "outputs" / relative


def test_keep_outputs_lets_files_land_and_says_so(run_quickdev: Any, tmp_path: Path) -> None:
    root = _user_tree(tmp_path)
    run = run_quickdev("--keep-outputs", "writers.py", "--", "open_w", cwd=root)
    assert run.returncode == 0, run.stderr
    assert run.result["keep_outputs"] is True
    assert (root / "model.pt").read_text() == "overwritten"
    plain = run_quickdev(
        "--keep-outputs", "writers.py", "--", "open_x", cwd=root, json_output=False
    )
    assert "kept where the script wrote them (--keep-outputs)" in plain.stderr


def test_a_failing_job_is_restored_too(run_quickdev: Any, tmp_path: Path) -> None:
    root = _user_tree(tmp_path)
    (root / "fail.py").write_text("open('model.pt', 'w').write('half')\nraise ValueError('boom')\n")
    before = snapshot(root)
    run = run_quickdev("fail.py", cwd=root)
    assert run.result["status"] == "failed"
    assert snapshot(root) == before
    (output,) = run.result["outputs"]
    assert Path(output["written"]).read_text() == "half"


def test_a_backup_that_cannot_be_written_is_a_one_line_error(
    run_quickdev: Any, tmp_path: Path
) -> None:
    # A change in place needs a copy of the original; a full disk (a file-size limit here)
    # refuses it. (An append needs none: see test_journal_edits.py.)
    root = _user_tree(tmp_path)
    (root / "logs" / "train.log").write_bytes(b"line\n" * 20_000)
    (root / "append.py").write_text(
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))\n"
        "open('logs/train.log', 'r+').write('more')\n"
    )
    before = snapshot(root)
    run = run_quickdev("append.py", cwd=root)
    assert run.result["status"] == "failed"
    message = run.result["error"]["message"]
    assert message.startswith("quickdev: cannot keep a copy of ") and "\n" not in message
    assert snapshot(root) == before


def test_file_size_limit_fails_the_job_and_the_tree_is_intact(
    run_quickdev: Any, tmp_path: Path
) -> None:
    root = _user_tree(tmp_path)
    (root / "big.py").write_text(
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))\n"
        "open('model.pt', 'wb').write(b'x' * 100_000)\n"
    )
    before = snapshot(root)
    run = run_quickdev("big.py", cwd=root)
    assert run.result["status"] == "failed"
    assert "File too large" in run.result["error"]["message"]
    assert "\n" not in run.result["error"]["message"]
    assert snapshot(root) == before


HOLD_OPEN = """
import sys, time
f = open("model.pt", "wb")
f.write(b"half a checkpoint")
f.flush()
print("holding", flush=True)
time.sleep(60)
"""


def test_sigkill_then_the_next_run_restores(
    run_quickdev: Any, tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    root = _user_tree(tmp_path)
    (root / "hold.py").write_text(HOLD_OPEN)
    before = snapshot(root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "quickdev", "run", "hold.py"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    processes.append(proc)
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while b"holding" not in proc.stdout.readline():
        assert time.monotonic() < deadline and proc.poll() is None
    assert (root / "model.pt").read_bytes() == b"half a checkpoint"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert snapshot(root) != before
    (root / "noop.py").write_text("print('hello')\n")
    before["noop.py"] = snapshot(root)["noop.py"]
    run = run_quickdev("noop.py", cwd=root)
    assert run.returncode == 0, run.stderr
    (line,) = [line for line in run.stderr.splitlines() if "put back" in line]
    assert "killed run" in line
    assert snapshot(root) == before
    (killed,) = [d for d in (root / ".quickdev" / "runs").iterdir() if "hold" in d.name]
    assert (killed / "outputs" / "model.pt").read_bytes() == b"half a checkpoint"


TWO_JOBS = """
import sys, time
from pathlib import Path
me, other, signals = sys.argv[1], sys.argv[2], Path(sys.argv[3])

def wait_for(name):
    deadline = time.monotonic() + 60
    while not (signals / name).exists():
        assert time.monotonic() < deadline, name
        time.sleep(0.05)

if me == "b":
    wait_for("a-wrote")
Path("model.pt").write_text(me)
(signals / f"{me}-wrote").touch()
if me == "a":
    wait_for("b-wrote")  # then A ends while B still runs
else:
    wait_for("a-done")
    assert Path("model.pt").read_text() == "b", "B reads its own write after A ended"
print("ok", flush=True)
"""


def test_two_jobs_in_one_folder_each_restore_only_their_own(
    tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    root = _user_tree(tmp_path)
    (root / "both.py").write_text(TWO_JOBS)
    signals = tmp_path / "signals"  # outside the user's folder
    signals.mkdir()
    before = snapshot(root)

    def start(me: str, other: str) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "quickdev", "run", "--name", me, "both.py", "--"]
        proc = subprocess.Popen([*command, me, other, str(signals)], cwd=root)
        processes.append(proc)
        return proc

    a, b = start("a", "b"), start("b", "a")
    assert a.wait(timeout=120) == 0
    (signals / "a-done").touch()
    assert b.wait(timeout=120) == 0
    assert snapshot(root) == before
    runs = root / ".quickdev" / "runs"
    (run_a,) = runs.glob("*-a-*")
    (run_b,) = runs.glob("*-b-*")
    assert (run_b / "outputs" / "model.pt").read_text() == "b"
    assert (run_a / "outputs" / "model.pt").exists()


def test_run_history_is_ignored_by_git_and_pruned(tmp_path: Path) -> None:
    runs = tmp_path / ".quickdev" / "runs"
    history = {"20260101-a": "passed", "20260102-b": "running", "20260103-c": "failed"}
    for name, status in {**history, "20260104-d": "passed"}.items():
        create_run_dir(runs, name)
        (runs / name / "result.json").write_text(json.dumps({"id": name, "status": status}))
    assert (tmp_path / ".quickdev" / ".gitignore").read_text().splitlines()[-1] == "*"
    command = [sys.executable, "-m", "quickdev", "runs", "prune", "--keep", "1"]
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "quickdev: removed 2 run(s) from .quickdev/runs"
    # The newest is kept by count; the running one is never removed.
    assert sorted(p.name for p in runs.iterdir()) == ["20260102-b", "20260104-d"]


def test_a_job_prunes_the_history_as_its_retention_says(run_quickdev: Any, tmp_path: Path) -> None:
    runs = tmp_path / ".quickdev" / "runs"
    for name, status in {"20260101-a": "passed", "20260102-b": "running"}.items():
        create_run_dir(runs, name)
        (runs / name / "result.json").write_text(json.dumps({"id": name, "status": status}))
    (tmp_path / "noop.py").write_text("print('hello')\n")
    run = run_quickdev("--runs-keep", "1", "noop.py", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    # The new run is kept by count, the running one always; the old finished one goes.
    kept = sorted(p.name for p in runs.iterdir() if p.is_dir())
    assert kept == sorted(["20260102-b", run.run_dir.name])
