"""The job's side of its journal process (``service``): started, told the run's settings,
activated in this process and in the processes it starts, closed at the job's end, reaped.

Forked ahead (``fork_ahead``) where it can be: at the job's start, while the job process
runs one thread and has imported neither torch nor the script, a fork costs about a
millisecond and the journal's modules are the job's own, imported once. Otherwise (the
in-process API, a process that already runs threads) it is a new interpreter,
``python -I -S`` (nothing of the user's environment imported), which costs an interpreter's
start and the journal's imports: about 0.045 s of CPU, 2% of a small job (measured in
the job: docs/file-safety.md).

Either way the journal process is not interposed (it makes the changes it is asked about),
it shares the job's process group (a kill of the group ends it; Ctrl+C does not,
``service.serve``), it outlives a SIGKILL of the job alone only until it has read the end of
the control socket (its records are on disk for the next command's restore), and its CPU
time is the job's: the job reaps it when it ends.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import select
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from quickdev.limits.journal import interposer, service
from quickdev.limits.journal.scope import Scope

# A new interpreter's start: nothing of the user's environment is imported.
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from quickdev.limits.journal.service import main; main(int(sys.argv[2]), int(sys.argv[3]))"
)
_PACKAGE_ROOT = Path(__file__).resolve().parents[3]  # the folder that holds quickdev/
REAP_S = 5.0

_serving: list[socket.socket] = []  # held until this process ends
_ahead: _Started | None = None  # forked at the job's start, not yet told its settings


class _Started:
    """A journal process listening on ``name``, waiting for its settings on ``control``."""

    def __init__(self, name: str, control: socket.socket, wait: Callable[[float], object]) -> None:
        self.name = name
        self.control = control
        self.owner = os.getpid()
        self._wait = wait
        # The journal process serves as long as this end is open: until this process ends
        # (threads still running after the restore are refused by it), not until an object
        # is collected; a forked child holds no end of it.
        _serving.append(control)
        os.register_at_fork(after_in_child=control.close)
        atexit.register(self.end)

    def end(self) -> None:
        """This process ends: so does the journal process, reaped here (its time is the
        job's, as a benchmark counts it)."""
        self.control.close()
        with contextlib.suppress(Exception):
            self._wait(REAP_S)


class JournalProcess:
    """The job's journal process, started and activated in this process and its children."""

    def __init__(self, run_dir: Path, scope: Scope) -> None:
        library = interposer.library()
        assert library is not None
        started = _take_ahead() or _spawn()
        self.control = started.control
        text = scope.to_text()
        self.control.sendall(json.dumps({"run_dir": str(run_dir), "scope": text}).encode() + b"\n")
        if library.quickdev_journal_activate(started.name.encode(), text.encode()) != 0:
            raise OSError("the file interposer refused its settings")
        self.environment = {interposer.SOCKET_ENV: started.name, interposer.SCOPE_ENV: text}

    def close(self, refused: dict[int, str]) -> None:
        """The job's code is done: from now on only ``refused`` threads (id -> name) are
        refused, and nothing is journaled; returns once the journal process has heard it."""
        self.control.sendall(json.dumps({"close": refused}).encode() + b"\n")
        self.control.settimeout(60)
        reply = b""
        while not reply.endswith(b"\n"):
            data = self.control.recv(64)
            if not data:
                raise OSError("the job's journal process ended before the job")
            reply += data


def fork_ahead() -> None:
    """Fork this job's journal process now, cheaply: called at the job's start, before torch
    and the script are imported. Only while this process runs one thread (a fork copies the
    thread that makes it alone: a lock another thread held would stay held in the copy),
    and where the interposer is loaded (a job that has none needs no journal process)."""
    global _ahead
    if _ahead is not None or interposer.library() is None or _threads() != 1:
        return
    name, listener, ours, theirs = _sockets()
    for stream in (sys.stdout, sys.stderr):  # what they hold is written once, by the job
        with contextlib.suppress(Exception):
            stream.flush()
    pid = os.fork()
    if pid == 0:
        _serve_forked(listener, theirs, ours)
    listener.close()  # only the journal process listens (below)
    theirs.close()
    _ahead = _Started(name, ours, lambda timeout: _reap(pid, timeout))


def _take_ahead() -> _Started | None:
    global _ahead
    started, _ahead = _ahead, None
    if started is None or started.owner != os.getpid():
        return None  # a forked copy of the job: its end of the control socket is closed
    return started


def _spawn() -> _Started:
    import subprocess

    name, listener, ours, theirs = _sockets()
    fds = (listener.fileno(), theirs.fileno())
    # -I leaves PYTHONDONTWRITEBYTECODE out with the rest of the environment: -B keeps the
    # job's choice, else this interpreter writes the bytecode of our modules where the job's
    # would not (a folder a warm process watches, a read-only install).
    no_bytecode = ["-B"] if sys.flags.dont_write_bytecode else []
    process = subprocess.Popen(
        [sys.executable, "-I", "-S", *no_bytecode, "-c", _BOOT, str(_PACKAGE_ROOT), *map(str, fds)],
        pass_fds=fds, env=_not_interposed(os.environ), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    # Only the journal process listens: were it to die, a change would be refused at
    # once rather than wait on a socket nobody reads.
    listener.close()
    theirs.close()
    return _Started(name, ours, lambda timeout: process.wait(timeout))


def _sockets() -> tuple[str, socket.socket, socket.socket, socket.socket]:
    """The listener's name, the listener, the job's and the journal's ends of the control."""
    name = f"quickdev-journal-{os.getpid()}-{os.urandom(8).hex()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + name)  # abstract: no file, any length of run directory
    listener.listen(128)
    ours, theirs = socket.socketpair()
    return name, listener, ours, theirs


def _serve_forked(listener: socket.socket, control: socket.socket, ours: socket.socket) -> NoReturn:
    """The forked journal process: what a new interpreter would hold, then ``service``."""
    code = 1
    try:
        ours.close()
        _keep_only(listener.fileno(), control.fileno())
        # Its copy of the job's objects is never collected: no page of them is copied.
        gc.freeze()
        env = _not_interposed(os.environ)
        os.environ.clear()
        os.environ.update(env)
        service.serve(listener, control)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)  # nothing of the job's: no atexit handler, no buffer flushed


def _keep_only(*fds: int) -> None:
    """As a new process started with only ``fds`` (and stderr, for its messages): the job's
    standard input and output are not held open, nor the job's files."""
    if min(fds) > 2:  # else the job started with its standard input or output closed
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _not_interposed(environ: os._Environ[str] | dict[str, str]) -> dict[str, str]:
    """The environment without the interposer: the journal process is not asked about its
    own changes, nor is anything it would start."""
    unset = (interposer.SOCKET_ENV, interposer.SCOPE_ENV)
    env = {k: v for k, v in environ.items() if k not in unset}
    preloads = env.get("LD_PRELOAD", "").split(":")
    env["LD_PRELOAD"] = ":".join(p for p in preloads if os.path.basename(p) != interposer.LIBRARY)
    return env


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))  # native threads too
    except OSError:
        return threading.active_count()


def _reap(pid: int, timeout: float) -> None:
    """Wait up to ``timeout`` seconds for the forked journal process to end, and reap it."""
    try:
        pidfd = os.pidfd_open(pid)  # Linux 5.3: readable once the process has ended
    except (AttributeError, OSError):
        pidfd = -1
    deadline = time.monotonic() + timeout
    try:
        while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
            if pidfd >= 0:
                select.select([pidfd], [], [], max(0.0, deadline - time.monotonic()))
            else:
                time.sleep(0.01)
    except ChildProcessError:
        pass  # reaped already
    finally:
        if pidfd >= 0:
            os.close(pidfd)
