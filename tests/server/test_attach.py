"""Attaching the debugger to jobs already running, through the real server and real debugpy.

The job is a ``quickdev run --no-limits`` started from a terminal (a subprocess here), as
a user starts a long training run; the server finds it in the workspace's runs directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import LanguageClient
from quickdev.processes import start_ticks

from tests.support.dap import wait_for_json_file
from tests.support.debug import (
    LONG_JOB,
    assert_injection_refusal_text,
    host_injection_problem,
    line_of,
    read_variable_at,
)
from tests.support.server import execute, server_pid, torch_loaded_in

pytestmark = pytest.mark.asyncio

PLAIN_LOOP = textwrap.dedent(
    """
    import time

    step = 0
    while True:
        step += 1
        value = step * 2  # BREAK
        time.sleep(0.01)
    """
)


def start_terminal_job(
    workspace: Path, processes: list[subprocess.Popen[bytes]]
) -> tuple[Path, Path, Path]:
    """A full (``--no-limits``) job in the workspace's default runs directory."""
    script = workspace / "long_job.py"
    script.write_text(LONG_JOB, encoding="utf-8")
    stop = workspace / "stop"
    command = [sys.executable, "-m", "quickdev", "run", "--no-limits", "--run-id", "long"]
    proc = subprocess.Popen(
        [*command, str(script), "--", str(stop)],
        cwd=workspace,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    processes.append(proc)
    run_dir = workspace / ".quickdev" / "runs" / "long"
    wait_for_json_file(run_dir / "attach.json", timeout_s=120)
    assert json.loads((run_dir / "process.json").read_text())["pid"] == proc.pid
    return script, stop, run_dir


async def test_live_terminal_job_is_listed_and_accepts_the_debugger_twice(
    client: LanguageClient, workspace: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    script, stop, run_dir = start_terminal_job(workspace, processes)
    listed = await execute(client, "quickdev.listRuns", {})
    long_run = next(run for run in listed["runs"] if run["runId"] == "long")
    assert long_run["status"] == "running"
    assert long_run["started"].startswith(time.strftime("%Y", time.gmtime()))

    steps = []
    for argument in ({"runId": "long"}, {"runDir": str(run_dir)}):
        answer = await execute(client, "quickdev.attachJob", argument)
        assert "error" not in answer, answer
        assert answer["attach"]["host"] == "127.0.0.1"
        steps.append(read_variable_at(answer["attach"], script, line_of(script, "# BREAK"), "step"))
        assert processes[0].poll() is None, "the job must keep running after the detach"
    assert steps[1] > steps[0] >= 1

    stop.touch()
    assert processes[0].wait(timeout=120) == 0
    # The server asked the job by signal and never imported torch itself.
    assert not torch_loaded_in(server_pid(client))


async def test_a_job_killed_without_its_result_is_not_listed_as_running(
    client: LanguageClient, workspace: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    start_terminal_job(workspace, processes)
    processes[0].kill()
    processes[0].wait(timeout=30)
    listed = await execute(client, "quickdev.listRuns", {})
    assert next(run for run in listed["runs"] if run["runId"] == "long")["status"] == "killed"
    answer = await execute(client, "quickdev.attachJob", {"runId": "long"})
    assert "is no longer running" in answer["error"]
    assert "\n" not in answer["error"]


async def test_attach_by_pid_to_a_plain_python_process(
    client: LanguageClient, tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_LOOP, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script)])
    processes.append(proc)
    answer = await execute(client, "quickdev.attachPid", {"pid": proc.pid})
    if host_injection_problem() is not None:
        # gdb cannot write a traced process's registers here: refused, the target lives on.
        assert_injection_refusal_text(answer["error"])
        assert proc.poll() is None
        return
    assert "error" not in answer, f"attach by PID failed: {answer['error']}"
    assert answer["attach"]["pid"] == proc.pid
    assert read_variable_at(answer["attach"], script, line_of(script, "# BREAK"), "step") >= 1
    assert proc.poll() is None


async def test_attach_errors_are_one_line_answers(client: LanguageClient, tmp_path: Path) -> None:
    not_a_run = tmp_path / "not-a-run"
    not_a_run.mkdir()
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"runId": "no-such-run"}, "quickdev.attachJob", "no run no-such-run"),
        ({"runDir": str(not_a_run)}, "quickdev.attachJob", "has no attach.json"),
        ({}, "quickdev.attachJob", 'give "runId"'),
        ({"pid": "12"}, "quickdev.attachPid", '"pid" must be a process id'),
        ({"pid": 2**22 + 7}, "quickdev.attachPid", "no process with PID"),
    ]
    for argument, command, expected in cases:
        answer = await execute(client, command, argument)
        assert expected in answer["error"], (command, argument, answer)
        assert "\n" not in answer["error"]


async def test_a_stale_run_whose_pid_was_reused_is_not_signalled(
    client: LanguageClient, workspace: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    """A run left "running" (its server killed) names a PID that now runs something else."""
    sleeper = subprocess.Popen(["sleep", "300"])
    processes.append(sleeper)
    run_dir = workspace / ".quickdev" / "runs" / "stale"
    run_dir.mkdir(parents=True)
    result = {
        "schema": 1, "id": "stale", "status": "running", "script": str(workspace / "loop.py"),
        "started": "2026-01-02T03:04:05+00:00", "duration_s": 0.0,
    }  # fmt: skip
    (run_dir / "result.json").write_text(json.dumps(result), encoding="utf-8")
    # The job that wrote this started a while before the sleep that has its PID now.
    job_start = start_ticks(sleeper.pid)
    assert job_start is not None
    attach = {"pid": sleeper.pid, "start": job_start - 100, "signal": "SIGUSR1"}
    (run_dir / "attach.json").write_text(json.dumps(attach), encoding="utf-8")

    listed = await execute(client, "quickdev.listRuns", {})
    assert next(run for run in listed["runs"] if run["runId"] == "stale")["status"] == "killed"
    for argument in ({"runId": "stale"}, {"runDir": str(run_dir)}):
        answer = await execute(client, "quickdev.attachJob", argument)
        assert f"PID {sleeper.pid} is another process now" in answer["error"], answer
        assert "\n" not in answer["error"]
    time.sleep(0.3)  # a signal, had one been sent, is delivered by now
    assert sleeper.poll() is None, "the unrelated process must not be signalled"
