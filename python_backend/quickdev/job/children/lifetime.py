"""No process of the job outlives it (Linux): a parent-death signal, and a subreaper.

Each Python process of the job's tree asks the kernel for SIGKILL when its parent ends
(``PR_SET_PDEATHSIG``): fork children right after the fork, every other Python child
(spawn and forkserver workers, ``python prep.py``) at start-up (``child_site``). The
kernel keeps that promise however the parent ends, SIGKILL included, so killing the
``quickdev`` command ends its children, and theirs in turn.

The job is a subreaper (``PR_SET_CHILD_SUBREAPER``): a process whose parent ended
before it (a shell that put a program in the background, then exited) is re-parented
to the job instead of to init, so at its end the job finds every process it started
below itself and ends them (``end``).

Not a process group: from a terminal the job shares the shell's group with the rest of
its pipeline (``quickdev run … | tee log``), which is not the job's to end, and a group
of its own would take it out of the terminal's foreground (Ctrl+C, reading input). A
group also needs someone alive to signal it, which a SIGKILL of the command rules out.
(A job started by the language server leads a group of its own anyway, and a cancel
signals that group.)

Linux ties the parent-death signal to the thread that started the process: a process
started from a thread that ends before it is ended with that thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Iterable
from typing import Any

from quickdev.processes import pid_alive

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.05


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


# Found once, in the process that imports this: a fork child of a threaded parent must
# not load libraries (another thread may have held the loader's lock at the fork).
_prctl_function = _load_prctl()


def _prctl(option: int, value: int) -> bool:
    return _prctl_function is not None and _prctl_function(option, value, 0, 0, 0) == 0


def die_with_parent(expected_parent: int | None) -> None:
    """SIGKILL for this process when its parent ends. ``expected_parent``: the process
    that started this one; when it already ended (before the link was made), this
    process ends now. Another parent in between (a shell) that still runs is fine."""
    if not _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL):
        return
    if expected_parent and os.getppid() != expected_parent and not pid_alive(expected_parent):
        os.kill(os.getpid(), signal.SIGKILL)


def adopt_orphans() -> None:
    """Become the subreaper of every process started below this one."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def descendants(root: int) -> set[int]:
    """The running processes below ``root`` (zombies excluded), read from /proc."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return set()
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 1 and fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    found: set[int] = set()
    queue = [root]
    while queue:
        for pid in children.get(queue.pop(), []):
            if pid not in found:
                found.add(pid)
                queue.append(pid)
    return found


def wait_gone(pids: Iterable[int], timeout_s: float) -> set[int]:
    """Wait until the processes ended; returns those still running at the timeout."""
    deadline = time.monotonic() + timeout_s
    left = {pid for pid in pids if pid_alive(pid)}
    while left and time.monotonic() < deadline:
        time.sleep(POLL_S)
        left = {pid for pid in left if pid_alive(pid)}
    return left


def end(pids: Iterable[int], grace_s: float) -> None:
    """SIGTERM (a child job writes its result, then ends as SIGTERM would end it), then
    SIGKILL to what is left after ``grace_s``."""
    left = set(pids)
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        left = wait_gone(left, wait_s)
        if not left:
            return
