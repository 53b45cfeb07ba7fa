"""Attaching to processes that are already running, with the real debugpy over DAP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from quickdev.job.signals import HARD_STOP_GRACE_S
from quickdev.processes import start_ticks

from tests.support.dap import wait_for_json_file
from tests.support.debug import (
    LONG_JOB,
    assert_injection_refused,
    host_injection_problem,
    line_of,
    quickdev_env,
    read_variable_at,
)
from tests.support.strangers import KINDS, still_running, stranger_run

LOOP = textwrap.dedent(
    """
    import sys
    import time
    {setup}
    step = 0
    while True:
        step += 1
        loss_value = 1.0 / step  # BREAK
        time.sleep(0.01)
    """
)

SIGNAL_SETUP = textwrap.dedent(
    """
    from pathlib import Path
    from quickdev.job.attach_handler import install_attach_handler
    from quickdev.rundir.process import write_process_record
    write_process_record(Path(sys.argv[1]))  # as a job does first
    install_attach_handler(Path(sys.argv[1]))
    """
)


def quickdev_attach(
    *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "quickdev", "attach", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env or quickdev_env(),
    )


def test_running_job_accepts_debugger_twice_on_signal(tmp_path: Path, processes: list) -> None:
    script = tmp_path / "loop.py"
    script.write_text(LOOP.format(setup=SIGNAL_SETUP), encoding="utf-8")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    proc = subprocess.Popen([sys.executable, str(script), str(run_dir)], env=quickdev_env())
    processes.append(proc)
    wait_for_json_file(run_dir / "attach.json")
    recorded = json.loads((run_dir / "process.json").read_text())
    assert recorded["pid"] == proc.pid
    # Its start time and command line, so a later process reusing the PID is never taken
    # for the job.
    assert recorded["start"] == start_ticks(proc.pid) != None  # noqa: E711
    assert recorded["command"] == [sys.executable, str(script), str(run_dir)]
    assert not (run_dir / "debugpy.json").exists()  # nothing listens until asked

    steps = []
    for _ in range(2):
        answer = quickdev_attach("--run", str(run_dir))
        assert answer.returncode == 0, answer.stderr
        address = json.loads(answer.stdout.strip().splitlines()[-1])
        assert address["host"] == "127.0.0.1"
        assert address["pid"] == proc.pid
        assert json.loads((run_dir / "debugpy.json").read_text()) == address
        steps.append(read_variable_at(address, script, line_of(script, "# BREAK"), "step"))
        assert proc.poll() is None, "the job must keep running after the debugger detaches"
    assert steps[1] > steps[0] >= 1


def test_attach_by_pid_to_a_plain_python_process(tmp_path: Path, processes: list) -> None:
    script = tmp_path / "plain.py"
    script.write_text(LOOP.format(setup=""), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script)], env=quickdev_env())
    processes.append(proc)

    answer = quickdev_attach("--pid", str(proc.pid))
    problem = host_injection_problem()
    if problem is not None:
        # This host cannot inject (gdb cannot write a traced process's registers): the
        # attach is refused in one line naming the alternative, and the target lives on.
        assert_injection_refused(answer, proc)
        return
    assert answer.returncode == 0, f"attach by PID failed: {answer.stderr.strip()}"
    address = json.loads(answer.stdout.strip().splitlines()[-1])
    assert address["pid"] == proc.pid
    assert read_variable_at(address, script, line_of(script, "# BREAK"), "step") >= 1
    assert proc.poll() is None


def test_attach_by_pid_where_gdb_cannot_write_registers_spares_the_target(
    tmp_path: Path, processes: list
) -> None:
    """A gdb that fails as on the kernels where injection kills the target."""
    script = tmp_path / "plain.py"
    script.write_text(LOOP.format(setup=""), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script)], env=quickdev_env())
    processes.append(proc)
    tools = tmp_path / "bin"
    tools.mkdir()
    broken = tools / "gdb"
    broken.write_text(
        '#!/bin/sh\necho "Couldn\'t write extended state status: Bad address." >&2\nexit 1\n'
    )
    broken.chmod(0o755)
    env = {
        **quickdev_env(),
        "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    assert_injection_refused(quickdev_attach("--pid", str(proc.pid), env=env), proc)
    assert (
        "Couldn't write extended state status"
        in quickdev_attach("--pid", str(proc.pid), env=env).stderr
    )  # the cached answer, as the first


def test_attach_by_pid_without_gdb_names_the_fix(tmp_path: Path, processes: list) -> None:
    script = tmp_path / "plain.py"
    script.write_text(LOOP.format(setup=""), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script)], env=quickdev_env())
    processes.append(proc)
    # A PATH with no gdb on it: the real lookup fails, as on a machine without gdb.
    empty = tmp_path / "bin"
    empty.mkdir()
    answer = quickdev_attach("--pid", str(proc.pid), env={**quickdev_env(), "PATH": str(empty)})
    assert answer.returncode == 1
    lines = answer.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "gdb is not installed" in lines[0]
    assert "apt-get install gdb" in lines[0]


def test_attach_errors_are_one_line(tmp_path: Path) -> None:
    no_job = tmp_path / "not-a-run"
    no_job.mkdir()
    answer = quickdev_attach("--run", str(no_job))
    assert answer.returncode == 1
    assert "has no attach.json" in answer.stderr and len(answer.stderr.strip().splitlines()) == 1

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    answer = quickdev_attach("--pid", gone.stdout.strip())
    assert answer.returncode == 1
    assert f"no process with PID {gone.stdout.strip()}" in answer.stderr

    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        answer = quickdev_attach("--pid", str(sleeper.pid))
    finally:
        sleeper.kill()
        sleeper.wait()
    assert answer.returncode == 1
    assert f"PID {sleeper.pid} is not a Python process" in answer.stderr

    answer = quickdev_attach("--pid", str(os.getpid()), "--run", str(no_job))
    assert answer.returncode == 2  # usage: one target only


@pytest.mark.parametrize("kind", KINDS)
def test_attach_refuses_a_run_whose_record_cannot_prove_its_process(
    tmp_path: Path, kind: str, processes: list
) -> None:
    run_dir = stranger_run(tmp_path, kind, processes)
    sleeper = processes[-1]
    answer = quickdev_attach("--run", str(run_dir))
    assert answer.returncode == 1
    (line,) = answer.stderr.strip().splitlines()
    assert "was not signalled: " in line and f"PID {sleeper.pid}" in line
    assert still_running(sleeper), "quickdev attach signalled an unrelated process"


def test_quickdev_job_without_limits_accepts_debugger_twice(
    tmp_path: Path, processes: list
) -> None:
    script = tmp_path / "long_job.py"
    script.write_text(LONG_JOB, encoding="utf-8")
    stop = tmp_path / "stop"
    run_dir = tmp_path / "runs" / "long"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "quickdev", "run", "--no-limits",
            "--runs-dir", str(tmp_path / "runs"), "--run-id", "long",
            str(script), "--", str(stop),
        ],
        env=quickdev_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    processes.append(proc)
    wait_for_json_file(run_dir / "attach.json", timeout_s=120)
    assert json.loads((run_dir / "process.json").read_text())["pid"] == proc.pid

    steps = []
    for _ in range(2):
        answer = quickdev_attach("--run", str(run_dir))
        assert answer.returncode == 0, answer.stderr
        address = json.loads(answer.stdout.strip().splitlines()[-1])
        steps.append(read_variable_at(address, script, line_of(script, "# BREAK"), "step"))
    assert steps[1] > steps[0] >= 1

    stop.touch()
    assert proc.wait(timeout=120) == 0
    assert json.loads((run_dir / "result.json").read_text())["status"] == "passed"


def test_attaching_a_debugger_lifts_the_wall_clock(tmp_path: Path, processes: list) -> None:
    script = tmp_path / "long_job.py"
    script.write_text(LONG_JOB, encoding="utf-8")
    stop = tmp_path / "stop"
    run_dir = tmp_path / "runs" / "long"
    timeout_s = 30
    started = time.monotonic()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "quickdev", "run", "--timeout", str(timeout_s),
            "--runs-dir", str(tmp_path / "runs"), "--run-id", "long",
            str(script), "--", str(stop),
        ],
        env=quickdev_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    processes.append(proc)
    wait_for_json_file(run_dir / "attach.json", timeout_s=timeout_s - 5)
    answer = quickdev_attach("--run", str(run_dir))
    assert answer.returncode == 0, answer.stderr
    address = json.loads(answer.stdout.strip().splitlines()[-1])
    assert read_variable_at(address, script, line_of(script, "# BREAK"), "step") >= 1

    # Past the alarm and the hard stop that follows it, the job is still running.
    while time.monotonic() < started + timeout_s + HARD_STOP_GRACE_S + 2:
        assert proc.poll() is None, "the wall clock ended a job a debugger had attached to"
        time.sleep(0.5)
    stop.touch()
    assert proc.wait(timeout=120) == 0
    result = json.loads((run_dir / "result.json").read_text())
    assert (result["status"], result["limits"]["timeout_s"]) == ("passed", None)
