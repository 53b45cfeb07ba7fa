"""The server's end of one warm process (``python -m quickdev.warm``): start it, ask it to
preload, fork jobs from it, and learn each job's exit from it (it is their parent).

A reader thread takes the process's messages; the event loop only waits briefly for the
answer to a fork (the time to copy page tables).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from quickdev.server.log import log
from quickdev.warm import protocol

FORK_ANSWER_S = 10.0
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"


class WarmError(Exception):
    """This warm process cannot start the job; the job starts cold. One line: why."""


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
        self.ready = threading.Event()
        self.report: dict[str, Any] = {}
        self.watched: dict[str, int | None] = {}
        self.jobs: dict[int, WarmJob] = {}
        self.closed = False
        self._answers: dict[int, dict[str, Any]] = {}
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
        self.ready.clear()
        wanted = [[name, list(attributes)] for name, attributes in modules]
        self._send({"op": "preload", "modules": wanted, "user_roots": user_roots})

    def stale(self) -> str | None:
        """Why the preloaded modules may no longer be what is installed, or None."""
        for path, stamp in self.watched.items():
            if _stamp(path) != stamp:
                return f"{path} changed"
        return None

    def fork(
        self, argv: list[str], cwd: Path, env: dict[str, str], stdio: Sequence[int]
    ) -> WarmJob:
        with self._answered:
            self._next_id += 1
            request_id = self._next_id
        self._send(
            {"op": "fork", "id": request_id, "argv": argv, "cwd": str(cwd), "env": env}, stdio
        )
        with self._answered:
            if not self._answered.wait_for(
                lambda: request_id in self._answers or self.closed, FORK_ANSWER_S
            ):
                self.close()  # a late fork would be a job nobody follows
                raise WarmError(f"the warm process did not fork in {FORK_ANSWER_S:.0f} s")
            answer = self._answers.pop(request_id, None)
        if answer is None:
            raise WarmError("the warm process ended")
        if answer["op"] == "refused":
            raise WarmError(str(answer["reason"]))
        return self.jobs[int(answer["pid"])]

    def close(self) -> None:
        """End the warm process (its running jobs go on; their exits are then unknown to it,
        so they are ended too rather than left unreported)."""
        self.closed = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(2)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def _send(self, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
        try:
            protocol.send(self._sock, message, fds)
        except OSError as exc:
            self.closed = True
            raise WarmError(f"the warm process is gone ({exc.strerror or exc})") from None

    def _read(self) -> None:
        try:
            while (received := protocol.receive(self._sock)) is not None:
                self._handle(received[0])
        except (OSError, ValueError) as exc:
            log.debug("warm process %s: %s", self.process.pid, exc)
        with self._answered:
            self.closed = True
            self._answered.notify_all()
        self.ready.set()
        for job in list(self.jobs.values()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(job.pid, signal.SIGKILL)
            job.ended(-signal.SIGKILL)
        self.process.wait()

    def _handle(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "ready":
            self.report = message
            self.watched = {path: _stamp(path) for path in message.get("watch", [])}
            log.info(
                "warm process %s ready: %d modules imported, resident %.0f MB%s",
                self.process.pid,
                len(message.get("loaded", [])),
                message.get("rss_mb") or 0.0,
                f"; cannot fork: {message['unsafe']}" if message.get("unsafe") else "",
            )
            self.ready.set()
        elif op in ("forked", "refused"):
            if op == "forked":
                self.jobs[int(message["pid"])] = WarmJob(int(message["pid"]))
            with self._answered:
                self._answers[int(message["id"])] = message
                self._answered.notify_all()
        elif op == "exit":
            job = self.jobs.pop(int(message["pid"]), None)
            if job is not None:
                job.ended(int(message["returncode"]))


def stdio_for(output: IO[bytes]) -> tuple[list[int], int]:
    """stdin (the null device), stdout and stderr (the launch log) as a cold job gets them;
    the caller closes the returned null device descriptor once sent."""
    null = os.open(os.devnull, os.O_RDONLY)
    return [null, output.fileno(), output.fileno()], null


def _stamp(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None
