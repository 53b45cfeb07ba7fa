"""``quickdev.attachJob`` and ``quickdev.attachPid``: a debugger for a process already running.

A quick-dev job is asked in-process (``quickdev.attach`` signals it, once its
``process.json`` proves the PID is the job's; no torch is imported here). Any other Python
process goes through ``<job interpreter> -m quickdev attach --pid``, since debugpy's PID
injection must run with an interpreter that has debugpy, and the server's own may not be
the one the user's process runs.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from quickdev.attach import DEFAULT_TIMEOUT_S, AttachError, attach_to_run
from quickdev.processes import NEUTRAL_CWD
from quickdev.rundir.validate import InvalidData, structure
from quickdev.server import protocol
from quickdev.server.app import QuickdevServer
from quickdev.server.commands import CommandError, problem, register
from quickdev.server.job_environment import helper_environment
from quickdev.server.runs import runs_of

# debugpy's own injection waits up to DEFAULT_TIMEOUT_S; the process gets a little more.
_PID_COMMAND_TIMEOUT_S = DEFAULT_TIMEOUT_S + 15.0


@dataclass(frozen=True)
class AttachJob:
    runId: str | None = field(default=None, metadata=problem('"runId" must be a run id'))
    runDir: str | None = field(default=None, metadata=problem('"runDir" must be a folder path'))


@dataclass(frozen=True)
class AttachPid:
    pid: int = field(
        metadata=problem('"pid" must be a process id (a whole number > 0), got {value!r}')
    )


@dataclass(frozen=True)
class Address:
    """What ``attach_to_run`` and ``quickdev attach --pid`` report."""

    host: str
    port: int
    pid: int | None = None


def setup(server: QuickdevServer) -> None:
    register(server, "quickdev.attachJob", AttachJob, attach_job)
    register(server, "quickdev.attachPid", AttachPid, attach_pid)


async def attach_job(ls: QuickdevServer, which: AttachJob) -> protocol.AttachAnswer:
    run_dir = _run_dir(ls, which)
    try:
        address = await asyncio.to_thread(attach_to_run, run_dir)
    except AttachError as exc:
        raise CommandError(str(exc)) from None
    return {"attach": _address(address)}


def _run_dir(ls: QuickdevServer, which: AttachJob) -> Path:
    if which.runDir is not None:
        return Path(which.runDir).expanduser()
    if which.runId is None:
        raise CommandError('give "runId" (from quickdev.listRuns) or "runDir"')
    return runs_of(ls).find(which.runId).run_dir


async def attach_pid(ls: QuickdevServer, wanted: AttachPid) -> protocol.AttachAnswer:
    pid = wanted.pid
    if pid <= 0:
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
            env=helper_environment(),
            cwd=NEUTRAL_CWD,
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


def _address(address: object) -> protocol.Address:
    try:
        found = structure(address, Address)
    except InvalidData:
        raise CommandError(f"the debugger reported no usable address ({address!r})") from None
    answer: protocol.Address = {"host": found.host, "port": found.port}
    if found.pid is not None:
        answer["pid"] = found.pid
    return answer
