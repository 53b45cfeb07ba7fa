"""The server's end of one warm process (``python -m quickdev.warm``): start it, ask it to
preload, fork jobs from it, and learn each job's exit from it (it is their parent).

A reader thread takes the process's messages (typed in ``quickdev.warm.protocol``); the
event loop only waits briefly for the answer to a fork (the time to copy page tables).
Its lifecycle is one ``WarmState``.
"""

from __future__ import annotations

import contextlib
import enum
import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from quickdev.server.log import log
from quickdev.warm import protocol

FORK_ANSWER_S = 10.0
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"


class WarmError(Exception):
    """This warm process cannot start the job; the job starts cold. One line: why."""


class WarmState(enum.Enum):
    IMPORTING = "importing"  # started, or preloading: no job forks from it meanwhile
    READY = "ready"  # its imports are done and forking is safe
    UNSAFE = "unsafe"  # an import made forking unsafe (a thread, CUDA, a debugger)
    ENDED = "ended"  # closed by the server, or gone


class WarmJob:
    """A job forked by a warm process, with the part of ``Popen`` the job manager uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._ended = threading.Event()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self) -> int:
        self._ended.wait()
        assert self.returncode is not None
        return self.returncode

    def ended(self, returncode: int) -> None:
        if self.returncode is None:
            self.returncode = returncode
            self._ended.set()


class WarmProcess:
    def __init__(self, interpreter: str, env: dict[str, str], key: object) -> None:
        self.interpreter = interpreter
        self.env = env
        self.key = key  # what it was made for; another key needs another process
        self.state = WarmState.IMPORTING  # changed under _answered
        self.report: protocol.Ready | None = None  # of the last preload
        # Path: its stamp (protocol.stamp) when the warm process first imported from it.
        self.watched: dict[str, int | None] = {}
        self.jobs: dict[int, WarmJob] = {}
        self._retired = False  # forks no more jobs; ends once those it forked have ended
        self._answers: dict[int, protocol.Forked | protocol.Refused] = {}
        self._answered = threading.Condition()
        self._next_id = 0
        self._sock, theirs = protocol.pair()
        own_env = dict(env)
        own_env.setdefault(BLAS_THREADS_ENV, "1")  # the jobs get theirs back (warm/child.py)
        with theirs:
            self.process = subprocess.Popen(
                [interpreter, "-m", "quickdev.warm", str(theirs.fileno())],
                env=own_env,
                # Not the workspace: ``-m`` puts the working directory first on the path.
                cwd=os.path.abspath(os.sep),
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        threading.Thread(target=self._read, name="warm-reader", daemon=True).start()

    def preload(self, modules: Sequence[tuple[str, Sequence[str]]], user_roots: list[str]) -> None:
        self._enter(WarmState.IMPORTING)
        wanted = [(name, list(attributes)) for name, attributes in modules]
        self._send(protocol.Preload(wanted, user_roots))

    def stale(self) -> str | None:
        """Why the preloaded modules may no longer be what is installed, or None."""
        for path, stamp in self.watched.items():
            if protocol.stamp(path) != stamp:
                return f"{path} changed"
        return None

    def fork(
        self, argv: list[str], cwd: Path, env: dict[str, str], stdio: Sequence[int]
    ) -> WarmJob:
        with self._answered:
            self._next_id += 1
            request_id = self._next_id
        self._send(protocol.Fork(request_id, argv, str(cwd), env), stdio)
        with self._answered:
            if not self._answered.wait_for(
                lambda: request_id in self._answers or self.state is WarmState.ENDED,
                FORK_ANSWER_S,
            ):
                self.close()  # a late fork would be a job nobody follows
                raise WarmError(f"the warm process did not fork in {FORK_ANSWER_S:.0f} s")
            answer = self._answers.pop(request_id, None)
        if answer is None:
            raise WarmError("the warm process ended")
        if isinstance(answer, protocol.Refused):
            raise WarmError(answer.reason)
        return self.jobs[answer.pid]

    def retire(self) -> None:
        """Fork no more jobs; end once the jobs forked from it have ended. It is their
        parent, the one that learns their exits: ending it now would end them too, a user's
        run killed because another run's settings differ or a package changed."""
        with self._answered:
            self._retired = True
            running = bool(self.jobs)
        if not running:
            self.close()

    def close(self) -> None:
        """End the warm process now (its running jobs go on; their exits are then unknown to
        it, so they are ended too rather than left unreported)."""
        self._enter(WarmState.ENDED)
        with contextlib.suppress(OSError):
            self._sock.shutdown(2)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def _enter(self, state: WarmState) -> None:
        """Move to ``state``; an ended process stays ended."""
        with self._answered:
            if self.state is not WarmState.ENDED:
                self.state = state
            self._answered.notify_all()

    def _send(self, message: protocol.ToWarm, fds: Sequence[int] = ()) -> None:
        try:
            protocol.send(self._sock, message, fds)
        except OSError as exc:
            self._enter(WarmState.ENDED)
            raise WarmError(f"the warm process is gone ({exc.strerror or exc})") from None

    def _read(self) -> None:
        try:
            while (received := protocol.receive(self._sock)) is not None:
                self._handle(received[0])
        except (OSError, ValueError) as exc:
            log.debug("warm process %s: %s", self.process.pid, exc)
        self._enter(WarmState.ENDED)
        for job in list(self.jobs.values()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(job.pid, signal.SIGKILL)
            job.ended(-signal.SIGKILL)
        self.process.wait()

    def _handle(self, message: protocol.Message) -> None:
        if isinstance(message, protocol.Ready):
            self.report = message
            # The earliest stamp of a path stays: a later preload imports nothing new from
            # it, and a change made since the first import must still show.
            for path, stamp in message.watch.items():
                self.watched.setdefault(path, stamp)
            log.info(
                "warm process %s ready: %d modules imported, resident %.0f MB%s",
                self.process.pid,
                len(message.loaded),
                message.rss_mb or 0.0,
                f"; cannot fork: {message.unsafe}" if message.unsafe else "",
            )
            self._enter(WarmState.UNSAFE if message.unsafe else WarmState.READY)
        elif isinstance(message, protocol.Forked | protocol.Refused):
            if isinstance(message, protocol.Forked):
                self.jobs[message.pid] = WarmJob(message.pid)
            with self._answered:
                self._answers[message.id] = message
                self._answered.notify_all()
        elif isinstance(message, protocol.Exited):
            with self._answered:
                job = self.jobs.pop(message.pid, None)
                last = self._retired and not self.jobs
            if job is not None:
                job.ended(message.returncode)
            if last:
                self.close()


def stdio_for(output: IO[bytes]) -> tuple[list[int], int]:
    """stdin (the null device), stdout and stderr (the launch log) as a cold job gets them;
    the caller closes the returned null device descriptor once sent."""
    null = os.open(os.devnull, os.O_RDONLY)
    return [null, output.fileno(), output.fileno()], null
