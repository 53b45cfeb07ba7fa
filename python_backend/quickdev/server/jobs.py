"""Quick-dev job processes: spawn, watch their run directory, cancel. No LSP here.

A job is ``<python> -m quickdev run --run-id ID --runs-dir DIR ... SCRIPT -- ARGS`` in its
own process group (so cancelling stops the script's children too). While it runs it writes
``progress.json`` and, in debug mode, ``debugpy.json``; at the end ``result.json``. The
process's exit is an event (a thread waits for it); the files, written by another process,
are polled while it runs. ``on_change`` is called whenever the run's summary changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, Protocol

import quickdev
from quickdev.processes import DEBUGPY_PATH_ENV, SERVER_PROCESS_ENV, process_token, start_ticks
from quickdev.rundir.ids import create_run_dir, new_run_id
from quickdev.rundir.layout import DEBUGPY_FILE, LAUNCH_LOG, PROGRESS_FILE
from quickdev.rundir.process import ProcessRecord
from quickdev.rundir.result import JobResult
from quickdev.rundir.retention import RETENTION, Retention
from quickdev.rundir.validate import InvalidData, read_json, read_result_checked
from quickdev.server.log import log
from quickdev.server.run_processes import end_run, kill_run
from quickdev.server.types import Failure

Mode = Literal["run", "profile", "debug"]
RunStatus = Literal["queued", "running", "passed", "failed", "stopped", "killed", "cancelled"]
MODES: tuple[Mode, ...] = ("run", "profile", "debug")
FINISHED = frozenset({"passed", "failed", "stopped", "killed", "cancelled"})

# What the job process itself printed (before and around the runner): read to explain a
# job that died without writing its result, e.g. an interpreter without torch.
POLL_S = 0.1
# The directory holding this server's quickdev package, put on the job's PYTHONPATH.
# The PYTHONPATH the editor had before it added the server's bundled libraries; set by
# the extension (extension/server/server.ts). Unset (a server run from a terminal): PYTHONPATH.
USER_PYTHONPATH_ENV = "QUICKDEV_USER_PYTHONPATH"


class JobProcess(Protocol):
    """What the manager needs of a job's process: a ``Popen``, or a job forked by a warm
    process (server/warm.py). ``pid`` leads the job's process group."""

    pid: int

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...


class JobError(Exception):
    """A job cannot start; the message is one line naming the problem and the fix."""


@dataclass
class JobRequest:
    script: Path
    mode: Mode
    cwd: Path
    runs_dir: Path
    interpreter: str
    args: list[str] = field(default_factory=list)
    batches: int = 2
    # Variables the user gave (launch configuration env/envFile): over the server's own.
    env: dict[str, str] = field(default_factory=dict)
    max_steps: int | None = None
    timeout_s: float | None = None
    device: Literal["auto", "cpu"] | None = None
    nproc: int | None = None
    keep_outputs: bool = False
    retention: Retention = RETENTION
    find_nonfinite: bool = False  # the NaN hunt (--find-nonfinite)


@dataclass(frozen=True)
class Progress:
    """``progress.json``; a field the job has not written yet keeps its last value."""

    stage: str | None = None
    batches: int | None = None
    steps: int | None = None


@dataclass(frozen=True)
class Listening:
    """``debugpy.json``: where the job's debugpy listens."""

    port: int
    host: str = "127.0.0.1"
    pid: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host or "127.0.0.1", "port": self.port}


@dataclass
class Run:
    run_id: str
    request: JobRequest
    run_dir: Path
    status: RunStatus = "queued"
    started: float = field(default_factory=time.time)
    ended: float | None = None
    stage: str = "starting"
    batches_done: int = 0
    steps: int = 0
    attach: Listening | None = None
    result: JobResult | None = None
    failure: Failure | None = None  # set for a failed run
    process: JobProcess | None = field(default=None, repr=False)
    start_ticks: int | None = None  # of the process: tells it from a reused PID
    finished: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    # Set once the attach address is known or the run ended without one.
    attach_settled: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def script(self) -> Path:
        return self.request.script


def job_command(request: JobRequest, run_id: str) -> list[str]:
    command = [request.interpreter, "-m", "quickdev", "run", "--run-id", run_id]
    command += ["--runs-dir", str(request.runs_dir), "--batches", str(request.batches)]
    if request.keep_outputs:
        command.append("--keep-outputs")
    if request.retention != RETENTION:
        command += ["--runs-keep", str(request.retention.keep_runs)]
        command += ["--runs-max-size-mb", str(request.retention.max_size_mb)]
    if request.mode == "profile":
        command.append("--profile")
    if request.max_steps is not None:
        command += ["--max-steps", str(request.max_steps)]
    if request.timeout_s is not None:
        command += ["--timeout", str(request.timeout_s)]
    if request.device is not None:
        command += ["--device", request.device]
    if request.nproc is not None and request.nproc > 1:
        command += ["--nproc", str(request.nproc)]
    if request.find_nonfinite:
        command.append("--find-nonfinite")
    if request.mode == "debug":
        command += ["--listen", "127.0.0.1:0", "--wait-for-client"]
    return [*command, str(request.script), "--", *request.args]


def job_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a job: the user's, their launch configuration's variables over
    it, with only the quickdev package added.

    The server's own PYTHONPATH holds the libraries the extension bundles for it
    (pygls, attrs, typing_extensions, debugpy, ...); the user's script must import its
    own environment's copies, so a job gets the PYTHONPATH the editor had before the
    extension added its own (``USER_PYTHONPATH_ENV``), or the one the configuration
    sets, and debugpy only as a fallback.
    """
    env = dict(os.environ)
    user = env.pop(USER_PYTHONPATH_ENV, env.get("PYTHONPATH", ""))
    env.update(extra or {})
    user = (extra or {}).get("PYTHONPATH", user)
    paths = [str(quickdev.PACKAGE_DIR.parent), *filter(None, user.split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env.pop("PYTHONSAFEPATH", None)  # a job's script sees the sys.path python gives it
    debugpy = importlib.util.find_spec("debugpy")
    if debugpy is not None and debugpy.origin:
        env[DEBUGPY_PATH_ENV] = str(Path(debugpy.origin).parent.parent)
    env["PYTHONUNBUFFERED"] = "1"
    # The job ends itself when this server is gone (quickdev.job.signals).
    env[SERVER_PROCESS_ENV] = process_token(os.getpid())
    return env


def helper_environment() -> dict[str, str]:
    """The environment of a process the server starts for itself (PID injection): the
    server's libraries, and quickdev, which the job interpreter need not have."""
    env = dict(os.environ)
    env.pop(USER_PYTHONPATH_ENV, None)
    paths = [
        str(quickdev.PACKAGE_DIR.parent),
        *filter(None, env.get("PYTHONPATH", "").split(os.pathsep)),
    ]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def launch_cold(
    request: JobRequest, command: list[str], env: dict[str, str], output: IO[bytes]
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        command,
        cwd=request.cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


Launcher = Callable[[JobRequest, list[str], dict[str, str], IO[bytes]], JobProcess]


class JobManager:
    def __init__(self, on_change: Callable[[Run], None]) -> None:
        self._on_change = on_change
        self.launch: Launcher = launch_cold  # the warm start replaces it
        self.runs: dict[str, Run] = {}
        self._watchers: set[asyncio.Task[None]] = set()

    def start(self, request: JobRequest) -> Run:
        """Spawn the job (call from the event loop); raises JobError with a clear message."""
        run_id = new_run_id(request.script.stem)
        try:
            run_dir = create_run_dir(request.runs_dir, run_id, exist_ok=False)
            launch_log = (run_dir / LAUNCH_LOG).open("wb")
        except OSError as exc:
            raise JobError(
                f"cannot write the runs directory {request.runs_dir} ({exc.strerror or exc}); "
                "set quickdev.runsDir to a writable folder"
            ) from None
        run = Run(run_id, request, run_dir)
        with launch_log:
            try:
                command = job_command(request, run_id)
                run.process = self.launch(
                    request, command, job_environment(request.env), launch_log
                )
            except OSError as exc:
                raise JobError(
                    f"cannot start {request.interpreter} ({exc.strerror or exc}); "
                    "set quickdev.python to your training environment's interpreter"
                ) from None
        run.status = "running"
        run.start_ticks = start_ticks(run.process.pid)
        self.runs[run_id] = run
        log.info("started run %s: %s", run_id, job_command(request, run_id))
        loop = asyncio.get_running_loop()
        exited = asyncio.Event()
        _notify_exit(run.process, loop, exited)
        task = loop.create_task(self._watch(run, run.process, exited))
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)
        self._on_change(run)
        return run

    async def cancel(self, run: Run) -> bool:
        """End the run's process groups, also what outlived a job that ended (a child, the
        ranks of a dead torchrun parent); False when nothing of it was running."""
        if run.process is None:
            return False
        if run.status in FINISHED:
            return await end_run(run.run_dir, _spawned(run))
        run.status = "cancelled"
        await end_run(run.run_dir, _spawned(run))
        await run.finished.wait()
        return True

    def kill_all(self) -> None:
        """On server exit: no job outlives the editor that started it."""
        # A copy: a startJob still being answered may add a run while this runs.
        for run in list(self.runs.values()):
            if run.process is not None:
                if run.status not in FINISHED:
                    run.status = "cancelled"
                kill_run(run.run_dir, _spawned(run))

    async def _watch(self, run: Run, process: JobProcess, exited: asyncio.Event) -> None:
        try:
            await self._follow(run, process, exited)
        except Exception:
            # A watcher that dies would leave the run "running" forever.
            log.exception("watching run %s failed", run.run_id)
            if not run.finished.is_set():
                run.status = "failed"
                run.failure = Failure("the server lost track of this run")
                run.finished.set()
                run.attach_settled.set()

    async def _follow(self, run: Run, process: JobProcess, exited: asyncio.Event) -> None:
        progress_stamp: float | None = None
        while not exited.is_set():
            stamp = _mtime(run.run_dir / PROGRESS_FILE)
            if stamp is not None and stamp != progress_stamp:
                progress_stamp = stamp
                if self._read_progress(run):
                    self._on_change(run)
            if run.attach is None and run.request.mode == "debug":
                run.attach = _read_listening(run.run_dir)
                if run.attach is not None:
                    run.attach_settled.set()
                    self._on_change(run)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(exited.wait(), POLL_S)
        self._finish(run, process.wait())

    def _read_progress(self, run: Run) -> bool:
        try:
            progress = read_json(run.run_dir / PROGRESS_FILE, Progress)
        except (OSError, InvalidData) as exc:
            log.debug("run %s: no progress read: %s", run.run_id, exc)
            return False
        before = (run.stage, run.batches_done, run.steps)
        run.stage = progress.stage if progress.stage is not None else run.stage
        run.batches_done = progress.batches if progress.batches is not None else run.batches_done
        run.steps = progress.steps if progress.steps is not None else run.steps
        return before != (run.stage, run.batches_done, run.steps)

    def _finish(self, run: Run, returncode: int) -> None:
        self._read_progress(run)
        run.result = read_result_checked(run.run_dir)
        if run.status != "cancelled":
            run.status = self._final_status(run, returncode)
        run.stage = "done"
        run.ended = time.time()
        if run.status == "failed":
            run.failure = self._failure(run, returncode)
        run.finished.set()
        run.attach_settled.set()
        log.info("run %s ended: %s (exit %s)", run.run_id, run.status, returncode)
        # Listeners run last: the run is complete even if one of them fails.
        self._on_change(run)

    @staticmethod
    def _final_status(run: Run, returncode: int) -> RunStatus:
        result = run.result
        if result is not None and result.status != "running":
            return result.status
        if returncode < 0:
            return "killed"
        return "passed" if returncode == 0 else "failed"

    @staticmethod
    def _failure(run: Run, returncode: int) -> Failure:
        error = run.result.error if run.result else None
        if error is not None:
            return Failure.of_error(error)
        return Failure(explain_early_exit(run, returncode))


def explain_early_exit(run: Run, returncode: int) -> str:
    """One line for a job that died before writing its result (usually its environment)."""
    text = ""
    with contextlib.suppress(OSError):
        text = (run.run_dir / LAUNCH_LOG).read_text(encoding="utf-8", errors="replace")
    interpreter = run.request.interpreter
    missing = re.findall(r"No module named '([^']+)'", text)
    if missing:
        return (
            f"the job interpreter {interpreter} has no module '{missing[-1]}'; install it "
            "there or set quickdev.python to an interpreter that has it"
        )
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = lines[-1] if lines else "no output"
    return f"the job exited with status {returncode} before writing its result: {last}"


def _spawned(run: Run) -> ProcessRecord | None:
    """The job process as this server started it: the leader of a new session."""
    if run.process is None:
        return None
    return ProcessRecord(run.process.pid, run.start_ticks, run.process.pid)


def _notify_exit(
    process: JobProcess, loop: asyncio.AbstractEventLoop, exited: asyncio.Event
) -> None:
    """Set ``exited`` (on the loop) when the process ends: a thread blocks in wait() for it."""

    def wait() -> None:
        process.wait()
        with contextlib.suppress(RuntimeError):  # the loop closed first: the server exits
            loop.call_soon_threadsafe(exited.set)

    threading.Thread(target=wait, name=f"wait-{process.pid}", daemon=True).start()


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime_ns / 1e9
    except OSError:
        return None


def _read_listening(run_dir: Path) -> Listening | None:
    try:
        return read_json(run_dir / DEBUGPY_FILE, Listening)
    except (OSError, InvalidData):
        return None  # not written yet, or half of it
