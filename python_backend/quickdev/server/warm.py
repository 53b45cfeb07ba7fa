"""Warm starts: the server keeps, per job interpreter, one warm process that has imported
torch and the libraries the script imports, and forks each job from it (``quickdev.warm``).

Prepared ahead, when a script is opened and when a job ends; replaced when the installed
packages, the job environment or the settings change; dropped after ``IDLE_S`` without
jobs. Whenever a warm start is not sure to be safe and faithful, the job starts cold, and
the log says why.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import sys
import threading
import time
from pathlib import Path
from typing import IO

from lsprotocol import types
from pygls.uris import to_fs_path

from quickdev.analysis.imports import Import, script_imports
from quickdev.frameworks import heavy_packages
from quickdev.server.app import QuickdevServer
from quickdev.server.job_environment import job_environment
from quickdev.server.job_request import JobRequest
from quickdev.server.jobs import launch_cold
from quickdev.server.log import log
from quickdev.server.run_state import JobProcess
from quickdev.server.types import Key
from quickdev.server.warm_process import WarmError, WarmProcess, WarmState, stdio_for
from quickdev.warm.safety import fork_supported

IDLE_S = 600.0
IDLE_CHECK_S = 60.0
# Worth a warm process: a script that imports one of these pays seconds of imports.
HEAVY = heavy_packages()


class WarmPool:
    def __init__(self, ls: QuickdevServer) -> None:
        self.ls = ls
        self.processes: dict[str, WarmProcess] = {}
        self.last_used: dict[str, float] = {}
        # Per interpreter, libraries whose import started a thread: never preloaded again.
        self.culprits: dict[str, set[str]] = {}
        self._idle_timer: asyncio.TimerHandle | None = None

    def launch(
        self, request: JobRequest, command: list[str], env: dict[str, str], output: IO[bytes]
    ) -> JobProcess:
        """The job manager's way to start a job: forked from a warm process when one is
        ready and safe, else cold."""
        process, reason = self._usable(request, env)
        if process is not None:
            stdio, null = stdio_for(output)
            try:
                job = process.fork(command[3:], request.cwd, env, stdio)
            except WarmError as exc:
                reason = str(exc)
                self._drop(request.interpreter, reason)
            else:
                log.info("job %s started warm from warm process %s", job.pid, process.process.pid)
                self._prepare_after(job, request, env)
                return job
            finally:
                os.close(null)
        log.info("job starts cold: %s", reason)
        cold = launch_cold(request, command, env, output)
        self._prepare_after(cold, request, env)
        return cold

    def _usable(self, request: JobRequest, env: dict[str, str]) -> tuple[WarmProcess | None, str]:
        why_not = self._disabled()
        if why_not is not None:
            return None, why_not
        if request.nproc is not None and request.nproc > 1:
            return None, "--nproc jobs start cold"
        process = self.processes.get(request.interpreter)
        if process is None:
            return None, "no warm process yet (one is prepared when this job ends)"
        if process.state is WarmState.IMPORTING:
            return None, "the warm process is still importing"
        spoiled = self._spoiled(request.interpreter, process, env)
        if spoiled is not None:
            return None, spoiled
        self.last_used[request.interpreter] = time.monotonic()
        return process, ""

    def _spoiled(self, interpreter: str, process: WarmProcess, env: dict[str, str]) -> str | None:
        """Why ``process`` may not serve a job with ``env`` (it is then dropped), or None.
        A library whose import made it unsafe is remembered and never preloaded again."""
        reason = None
        report = process.report
        if process.state is WarmState.ENDED:
            reason = "the warm process ended"
        elif process.key != self._key(env):
            reason = "the job environment or the settings changed"
        elif process.state is WarmState.UNSAFE and report is not None:
            if report.culprit:
                self.culprits.setdefault(interpreter, set()).add(report.culprit)
            reason = f"forking would not be safe: {report.unsafe}"
        elif (stale := process.stale()) is not None:
            reason = f"packages changed ({stale})"
        if reason is not None:
            self._drop(interpreter, reason)
        return reason

    def _disabled(self) -> str | None:
        if not self.ls.state.settings.warm_start:
            return "quickdev.warmStart is off"
        if not fork_supported():
            return "no safe fork on this platform"
        return None

    def _key(self, env: dict[str, str]) -> object:
        return (env, self.ls.state.settings)

    def prepare(self, interpreter: str, script: Path, env: dict[str, str]) -> None:
        """Have a warm process for ``interpreter`` with ``script``'s libraries imported."""
        if self._disabled() is not None:
            return
        process = self.processes.get(interpreter)
        if (
            process is not None
            and process.state is not WarmState.IMPORTING
            and self._spoiled(interpreter, process, env) is not None
        ):
            process = None
        imports = self._preloadable(interpreter, script)
        if process is None:
            try:
                process = WarmProcess(interpreter, env, self._key(env))
            except OSError as exc:
                log.info("no warm process for %s: %s", interpreter, exc.strerror or exc)
                return
            self.processes[interpreter] = process
            log.info("warm process %s started for %s", process.process.pid, interpreter)
        elif process.jobs or process.state is WarmState.IMPORTING:
            return  # it forks or imports now; more imports wait for the next chance
        self.last_used[interpreter] = time.monotonic()
        roots = [str(script.parent), *map(str, self.ls.workspace_folders())]
        with contextlib.suppress(WarmError):
            process.preload(imports, roots)
        self._watch_idle()

    def _preloadable(self, interpreter: str, script: Path) -> list[Import]:
        """The script's imports less the user's own (a name the script's folder holds,
        which a cold job would import first) and the libraries known to start threads."""
        culprits = self.culprits.get(interpreter, set())
        kept = []
        for name, attributes in script_imports(script):
            top = name.partition(".")[0]
            own = (script.parent / f"{top}.py").exists() or (script.parent / top).is_dir()
            if not own and top not in culprits:
                kept.append((name, attributes))
        return kept

    def _prepare_after(self, process: JobProcess, request: JobRequest, env: dict[str, str]) -> None:
        loop = asyncio.get_running_loop()

        def wait() -> None:
            process.wait()
            with contextlib.suppress(RuntimeError):  # the loop closed: the server exits
                loop.call_soon_threadsafe(self.prepare, request.interpreter, request.script, env)

        threading.Thread(target=wait, name=f"warm-after-{process.pid}", daemon=True).start()

    def _drop(self, interpreter: str, why: str) -> None:
        """No job is forked from it any more; the jobs it forked run to their end."""
        process = self.processes.pop(interpreter, None)
        if process is not None:
            running = len(process.jobs)
            after = f"; it ends after its running job{'s' * (running > 1)}" if running else ""
            log.info("warm process %s dropped: %s%s", process.process.pid, why, after)
            process.retire()

    def _watch_idle(self) -> None:
        if self._idle_timer is None:
            self._idle_timer = asyncio.get_running_loop().call_later(IDLE_CHECK_S, self._idle)

    def _idle(self) -> None:
        self._idle_timer = None
        now = time.monotonic()
        for interpreter, process in list(self.processes.items()):
            if not process.jobs and now - self.last_used.get(interpreter, now) > IDLE_S:
                self._drop(interpreter, f"no job for {IDLE_S:.0f} s")
        if self.processes:
            self._watch_idle()

    def close(self) -> None:
        """The server exits: each warm process ends now (the job manager ends the jobs)."""
        for interpreter in list(self.processes):
            process = self.processes.pop(interpreter)
            log.info("warm process %s ends: the server exits", process.process.pid)
            process.close()


WARM = Key("warm", WarmPool)


def setup(server: QuickdevServer) -> WarmPool:
    """Returns the pool, whose ``launch`` the job manager starts jobs with."""
    pool = WarmPool(server)
    server.state.put(WARM, pool)
    atexit.register(pool.close)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def on_open(ls: QuickdevServer, params: types.DidOpenTextDocumentParams) -> None:
        path = to_fs_path(params.text_document.uri)
        if path is None or not path.endswith(".py"):
            return
        script = Path(path)
        if any(name.partition(".")[0] in HEAVY for name, _ in script_imports(script)):
            interpreter = ls.state.settings.python or sys.executable
            pool.prepare(interpreter, script, job_environment({}))

    return pool
