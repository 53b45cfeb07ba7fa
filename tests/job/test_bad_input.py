"""Bad input ends with a clear one-line message and a result.json that says what happened."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.native_callback import SLOW_SORT, library_folder


def _script(tmp_path: Path, body: str, name: str = "script.py") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


def _one_usage_line(run: Any) -> str:
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr
    return lines[0]


def test_missing_script(run_quickdev: Any, tmp_path: Path) -> None:
    run = run_quickdev("no_such_train.py", cwd=tmp_path)
    assert run.returncode == 2
    line = _one_usage_line(run)
    assert "no such script: no_such_train.py" in line and "check the path" in line
    assert run.result["status"] == "failed"
    assert run.result["error"]["type"] == "UsageError"
    saved = json.loads((run.run_dir / "result.json").read_text())
    assert saved["error"]["message"] == run.result["error"]["message"]


def test_directory_instead_of_script(run_quickdev: Any, tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    run = run_quickdev("project", cwd=tmp_path)
    assert run.returncode == 2
    assert "project is a directory" in _one_usage_line(run)
    assert run.result["status"] == "failed"


def test_missing_module(run_quickdev: Any, tmp_path: Path) -> None:
    run = run_quickdev("-m", "no_such_package.train", cwd=tmp_path)
    assert run.returncode == 2
    assert "no_such_package" in _one_usage_line(run)


def test_unknown_option(run_quickdev: Any, tmp_path: Path) -> None:
    run = run_quickdev("--epochs", "3", "train.py", cwd=tmp_path)
    assert run.returncode == 2
    assert "unrecognized arguments: --epochs" in _one_usage_line(run)


def test_unwritable_runs_dir(run_quickdev: Any, tmp_path: Path) -> None:
    script = _script(tmp_path, "print('hello')\n")
    # /proc refuses new directories even to root, unlike a chmod-ed folder.
    run = run_quickdev("--runs-dir", "/proc/quickdev-runs", str(script), cwd=tmp_path)
    assert run.returncode == 2
    line = _one_usage_line(run)
    assert "cannot write the run directory" in line and "--runs-dir" in line
    assert "hello" not in run.stdout


def test_syntax_error(run_quickdev: Any, tmp_path: Path) -> None:
    script = _script(tmp_path, "import torch\n\ndef main(:\n    pass\n")
    run = run_quickdev(str(script), cwd=tmp_path)
    assert run.returncode == 1
    error = run.result["error"]
    assert error["type"] == "SyntaxError"
    assert (error["file"], error["line"]) == (str(script), 3)


def test_sys_exit_code_is_recorded(run_quickdev: Any, tmp_path: Path) -> None:
    script = _script(tmp_path, "import sys\n\nprint('bye')\nsys.exit(3)\n")
    run = run_quickdev(str(script), cwd=tmp_path)
    assert run.returncode == 1
    assert run.result["status"] == "failed"
    assert run.result["exit_code"] == 3
    assert (run.result["error"]["file"], run.result["error"]["line"]) == (str(script), 4)


def test_sys_exit_zero_passes(run_quickdev: Any, tmp_path: Path) -> None:
    script = _script(tmp_path, "import sys\nsys.exit(0)\n")
    run = run_quickdev(str(script), cwd=tmp_path)
    assert run.returncode == 0
    assert run.result["status"] == "passed"
    assert run.result["exit_code"] == 0


def test_json_is_its_own_last_line_after_unfinished_output(
    run_quickdev: Any, tmp_path: Path
) -> None:
    script = _script(tmp_path, "print('progress 3/10', end='')\n")
    run = run_quickdev(str(script), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == "progress 3/10"
    assert run.result is not None and run.result["status"] == "passed"


def test_hang_ends_at_timeout(run_quickdev: Any, tmp_path: Path) -> None:
    script = _script(tmp_path, "import time\n\ntime.sleep(600)\n")
    started = time.monotonic()
    run = run_quickdev("--timeout", "2", str(script), cwd=tmp_path)
    assert time.monotonic() - started < 60
    assert run.returncode == 0, (run.result or {}).get("error") or run.stderr
    assert run.result["status"] == "stopped"
    assert run.result["stop_reason"] == "timeout"


SORT_ACROSS_THE_TIMEOUT = """\
import signal
import sys
import time

sys.path.insert(0, sys.argv[1])
import slow_sort

print("sorting")
# Until a second past the job's alarm: the alarm falls in a callback from native code.
slow_sort.sort_for(signal.getitimer(signal.ITIMER_REAL)[0] + 1.0)
print("after the sort")
time.sleep(600)
"""


def test_a_timeout_inside_a_native_callback_stops_the_script_at_its_next_line(
    run_quickdev: Any, tmp_path: Path
) -> None:
    # On a GPU machine the alarm fell in torch's C++ (a pybind11 callback) and the raise
    # aborted the process: no result. Here a C library's callback stands in for it.
    library = library_folder(tmp_path, slow_sort=SLOW_SORT)
    script = _script(tmp_path, SORT_ACROSS_THE_TIMEOUT)
    # Long enough for the job's imports on a busy machine, so the alarm falls in the sort.
    run = run_quickdev("--timeout", "20", str(script), "--", str(library), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (run.result["status"], run.result["stop_reason"]) == ("stopped", "timeout")
    assert "sorting" in run.stdout, "the alarm came before the script: this proves nothing"
    assert "after the sort" not in run.stdout  # stopped at that line, not before nor later
    assert "Exception ignored" not in run.stderr  # no stop dropped inside the callback
    assert "did not respond" not in run.stderr  # the job's own end, not the hard stop


STUCK_IN_NATIVE_CODE = """\
import signal
import time

import torch
from torch.utils.data import DataLoader

for batch in DataLoader(torch.arange(10.0), batch_size=2):
    pass
# Ignoring the alarm stands in for native code that never returns to Python (a hung
# collective, a deadlock in an extension), which a test cannot produce reliably.
signal.signal(signal.SIGALRM, signal.SIG_IGN)
print("asleep in native code", flush=True)
time.sleep(600)
"""


def test_hang_in_native_code_still_ends(run_quickdev: Any, tmp_path: Path) -> None:
    script = _script(tmp_path, STUCK_IN_NATIVE_CODE)
    started = time.monotonic()
    # Long enough for the imports to finish on a busy machine, so the alarm hits the sleep.
    run = run_quickdev("--timeout", "10", str(script), cwd=tmp_path)
    assert time.monotonic() - started < 60
    assert run.returncode == 0, run.stderr
    if "asleep in native code" not in run.stdout:
        # The deadline came during the job's set-up: the stop was raised as the script
        # started, cleanly, and the hang this test is about never began.
        assert run.result["status"] == "stopped", run.stderr
        pytest.skip("this machine's job set-up outlasted the 10 s timeout: no hang to end")
    assert "the script did not respond" in run.stderr
    assert run.result["status"] == "stopped"
    assert run.result["stop_reason"] == "timeout"
    assert run.result["loaders"][0]["batches"] == 2
    saved = json.loads((run.run_dir / "result.json").read_text())
    assert saved["status"] == "stopped"


STEPS_FOREVER = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)


def train_step():
    optimizer.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    optimizer.step()


for step in range(1_000_000):
    try:
        train_step()  # ONE_STEP
    except Exception:
        print("swallowed the stop")
print("after the loop")
"""


def test_a_loop_inside_try_except_exception_ends_without_an_exception(
    run_quickdev: Any, tmp_path: Path
) -> None:
    script = _script(tmp_path, STEPS_FOREVER)
    run = run_quickdev("--max-steps", "3", str(script), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (run.result["status"], run.result["optimizer_steps"]) == ("passed", 3)
    assert "swallowed" not in run.stdout and "after the loop" in run.stdout


def test_user_except_exception_cannot_swallow_the_stop(run_quickdev: Any, tmp_path: Path) -> None:
    # Steps taken in a comprehension: no loop the job can end, so it stops the script.
    looping = STEPS_FOREVER.replace(
        "train_step()  # ONE_STEP", "[train_step() for _ in range(1_000)]"
    )
    script = _script(tmp_path, looping)
    run = run_quickdev("--max-steps", "3", str(script), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (run.result["status"], run.result["stop_reason"]) == ("stopped", "max_steps")
    assert run.result["optimizer_steps"] in (3, 4)  # 3.12 inlines the comprehension: one more
    assert "swallowed" not in run.stdout and "after the loop" not in run.stdout


def test_write_to_read_only_place(run_quickdev: Any, tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        "import torch\n"
        "print('start')\n"
        "torch.save({'w': torch.ones(2)}, '/proc/quickdev-model.pt')\n",
    )
    run = run_quickdev(str(script), cwd=tmp_path)
    # The write fails where the script made it, with the system's one-line reason.
    assert "start" in run.stdout
    assert run.returncode == 1
    error = run.result["error"]
    assert error["type"] in {"PermissionError", "FileNotFoundError", "OSError", "RuntimeError"}
    assert (error["file"], error["line"]) == (str(script), 3)
    assert "\n" not in error["message"]


BATCHES_FOREVER = """\
import time
import torch
from torch.utils.data import DataLoader

loader = DataLoader(torch.arange(100.0), batch_size=10)
while True:
    for batch in loader:
        time.sleep(0.05)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_killed_job_leaves_a_result(tmp_path: Path, signum: signal.Signals) -> None:
    script = _script(tmp_path, BATCHES_FOREVER)
    run_dir = tmp_path / ".quickdev" / "runs" / "killed-run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "quickdev", "run", "--run-id", "killed-run", str(script)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            progress = run_dir / "progress.json"
            if progress.exists() and json.loads(progress.read_text())["batches"] >= 4:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the job never reported batches")
        assert json.loads((run_dir / "result.json").read_text())["status"] == "running"
        proc.send_signal(signum)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "killed"
    assert result["stop_reason"] == f"signal {signum.name}"
    (loader,) = result["loaders"]
    assert loader["batches"] >= 4
    assert loader["passes"] >= 2
