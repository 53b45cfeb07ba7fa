"""``quickdev.attachJob`` and ``quickdev.attachPid``: a debugger for a process already running.

A quick-dev job is asked in-process (runner/attach.py signals it; no torch is imported
here). Any other Python process goes through ``<job interpreter> -m quickdev attach --pid``,
since debugpy's PID injection must run with an interpreter that has debugpy, and the
server's own may not be the one the user's process runs.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from quickdev.attach import DEFAULT_TIMEOUT_S, AttachError, attach_to_run
from quickdev.server.app import QuickdevServer
from quickdev.server.commands import Answer, CommandError, register, string_field
from quickdev.server.jobs import job_environment
from quickdev.server.runs import runs_state

# debugpy's own injection waits up to DEFAULT_TIMEOUT_S; the process gets a little more.
_PID_COMMAND_TIMEOUT_S = DEFAULT_TIMEOUT_S + 15.0


def setup(server: QuickdevServer) -> None:
    register(server, "quickdev.attachJob", attach_job)
    register(server, "quickdev.attachPid", attach_pid)


async def attach_job(ls: QuickdevServer, argument: dict[str, Any]) -> Answer:
    run_dir = _run_dir(ls, argument)
    try:
        address = await asyncio.to_thread(attach_to_run, run_dir)
    except AttachError as exc:
        raise CommandError(str(exc)) from None
    return {"attach": _address(address)}


def _run_dir(ls: QuickdevServer, argument: dict[str, Any]) -> Path:
    run_id = string_field(argument, "runId")
    run_dir = string_field(argument, "runDir")
    if run_dir is not None:
        return Path(run_dir).expanduser()
    if run_id is None:
        raise CommandError('give "runId" (from quickdev.listRuns) or "runDir"')
    runs = runs_state(ls)
    run = runs.jobs.runs.get(run_id)
    found = run.run_dir if run is not None else runs.find_run_dir(run_id)
    if found is None:
        raise CommandError(
            f"no run {run_id} in the runs directories; refresh the runs list, or pass "
            '"runDir" for a job writing elsewhere'
        )
    return found


async def attach_pid(ls: QuickdevServer, argument: dict[str, Any]) -> Answer:
    pid = argument.get("pid")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        raise CommandError(f'"pid" must be a process id (a whole number > 0), got {pid!r}')
    interpreter = ls.state.settings.python or sys.executable
    command = [interpreter, "-m", "quickdev", "attach", "--pid", str(pid)]
    try:
        proc = await asyncio.to_thread(
            subprocess.run,
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_PID_COMMAND_TIMEOUT_S,
            env=job_environment(),
        )
    except subprocess.TimeoutExpired:
        raise CommandError(
            f"attaching to PID {pid} took over {_PID_COMMAND_TIMEOUT_S:.0f}s; the process "
            "may be stuck in native code"
        ) from None
    except OSError as exc:
        raise CommandError(
            f"cannot run the job interpreter {interpreter} ({exc.strerror}); set "
            "quickdev.python to the python of your training environment"
        ) from None
    if proc.returncode != 0:
        raise CommandError(_last_line(proc.stderr) or f"quickdev attach exited {proc.returncode}")
    try:
        address = json.loads(_last_line(proc.stdout))
    except ValueError:
        raise CommandError(
            f"quickdev attach printed no address ({_last_line(proc.stdout)!r}); "
            "see the Quickdev log"
        ) from None
    return {"attach": _address(address)}


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1].strip() if lines else ""


def _address(address: dict[str, Any]) -> dict[str, Any]:
    host, port = address.get("host"), address.get("port")
    if not isinstance(host, str) or not isinstance(port, int):
        raise CommandError(f"the debugger reported no usable address ({address!r})")
    answer: dict[str, Any] = {"host": host, "port": port}
    if isinstance(address.get("pid"), int):
        answer["pid"] = address["pid"]
    return answer
