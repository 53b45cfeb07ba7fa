"""Quick-dev job processes: start, cancel, kill on exit. No LSP here.

A job is ``job_command``'s ``quickdev run`` (server/job_request.py) in its own process
group, so cancelling stops the script's children too. ``launch`` starts it: cold, as a new
process, unless the server passes the warm start's launcher (server/warm.py), which forks
it from a warm process. Once started, ``job_watch`` follows it to its end.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable
from typing import IO

from quickdev.rundir.ids import create_run_dir, new_run_id
from quickdev.rundir.layout import LAUNCH_LOG
from quickdev.rundir.process import spawned_record
from quickdev.server import job_watch
from quickdev.server.job_environment import job_environment
from quickdev.server.job_request import JobRequest, job_command
from quickdev.server.log import log
from quickdev.server.run_processes import end_run, kill_run
from quickdev.server.run_state import FINISHED, JobProcess, Run


class JobError(Exception):
    """A job cannot start; the message is one line naming the problem and the fix."""


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


# How a job process starts: given the request, its command line, environment and the
# launch log its stdout and stderr go to.
Launcher = Callable[[JobRequest, list[str], dict[str, str], IO[bytes]], JobProcess]


class JobManager:
    def __init__(self, on_change: Callable[[Run], None], launch: Launcher = launch_cold) -> None:
        self._on_change = on_change
        self._launch = launch
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
        command = job_command(request, run_id)
        env = job_environment(request.env, journal=not request.keep_outputs)
        with launch_log:
            try:
                process = self._launch(request, command, env, launch_log)
            except OSError as exc:
                raise JobError(
                    f"cannot start {request.interpreter} ({exc.strerror or exc}); "
                    "set quickdev.python to your training environment's interpreter"
                ) from None
        run.process = process
        run.status = "running"
        run.spawned = spawned_record(process.pid)
        self.runs[run_id] = run
        log.info("started run %s: %s", run_id, command)
        task = job_watch.watch(run, process, self._on_change)
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
            return await end_run(run.run_dir, run.spawned)
        run.status = "cancelled"
        await end_run(run.run_dir, run.spawned)
        await run.finished.wait()
        return True

    def kill_all(self) -> None:
        """On server exit: no job outlives the editor that started it."""
        # A copy: a startJob still being answered may add a run while this runs.
        for run in list(self.runs.values()):
            if run.process is not None:
                if run.status not in FINISHED:
                    run.status = "cancelled"
                kill_run(run.run_dir, run.spawned)
