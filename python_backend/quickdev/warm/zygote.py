"""The warm process: preload on request, fork a job on request, report each job's exit.

Single-threaded by design (a fork copies only the calling thread): it waits in
``select`` on the server's socket and on a pidfd per job it forked.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys

from quickdev.collector import freeze_imports
from quickdev.options import WarmStart
from quickdev.warm import child, protocol, safety
from quickdev.warm.preload import Preloaded, preload


def serve(fd: int) -> WarmStart | None:
    """Serve the server until it hangs up (None), or, in a forked job, return how it began
    (its argv is set in ``sys.argv``)."""
    startup = child.signal_handlers()  # as the interpreter set them, for the jobs
    before = frozenset(sys.modules)  # what the jobs get beyond this was preloaded for them
    sock = socket.socket(fileno=fd)
    done = Preloaded()
    jobs: dict[int, int] = {}  # pidfd: pid
    while True:
        readable, _, _ = select.select([sock.fileno(), *jobs], [], [])
        for pidfd in readable:
            if pidfd != sock.fileno():
                _report_exit(sock, jobs.pop(pidfd), pidfd)
        if sock.fileno() not in readable:
            continue
        received = protocol.receive(sock)
        if received is None:
            return None
        message, fds = received
        if isinstance(message, protocol.Preload):
            preload(message.modules, message.user_roots, done)
            # The jobs' pages also stay shared with this process: a collection writes to
            # each object it walks.
            freeze_imports()
            protocol.send(sock, _ready(done))
        elif isinstance(message, protocol.Fork):
            reason = done.unsafe or safety.problem()
            if reason is not None:
                protocol.send(sock, protocol.Refused(message.id, reason))
                _close(fds)
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                return child.become_job(message, fds, startup, [sock.fileno(), *jobs], before)
            _close(fds)
            jobs[os.pidfd_open(pid)] = pid
            protocol.send(sock, protocol.Forked(message.id, pid))
        else:
            _close(fds)  # a message for the server: not ours to answer


def _ready(done: Preloaded) -> protocol.Ready:
    return protocol.Ready(
        loaded=done.loaded,
        skipped=done.skipped,
        unsafe=done.unsafe,
        culprit=done.culprit,
        rss_mb=_rss_mb(),
        watch=dict(done.stamps),
    )


def _report_exit(sock: socket.socket, pid: int, pidfd: int) -> None:
    os.close(pidfd)
    try:
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
    except ChildProcessError:
        code = -signal.SIGKILL
    with contextlib.suppress(OSError):
        protocol.send(sock, protocol.Exited(pid, code))


def _rss_mb() -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _close(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
