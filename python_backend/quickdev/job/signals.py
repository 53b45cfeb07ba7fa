"""Ending a job early: the wall-clock alarm, kill signals and the hard stop.

The stop exceptions derive from BaseException so that a user's ``except Exception``
around the training loop cannot swallow them.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from quickdev.limits import stop_delivery
from quickdev.limits.budget import TIMEOUT, Budget, StopJob
from quickdev.limits.patching import Patcher
from quickdev.processes import SERVER_PROCESS_ENV, parse_process_token, same_process
from quickdev.threads import own_thread

log = logging.getLogger(__name__)

SERVER_GONE = "server gone"  # the stop reason of a job whose language server died
SERVER_POLL_S = 0.5
# Why this process sent itself a signal, for the handler to record instead of the signal.
_own_reasons: dict[int, str] = {}


class JobKilled(BaseException):
    """SIGTERM or SIGINT arrived; the job ends as ``killed``, ``reason`` saying why."""

    def __init__(self, signum: int, reason: str | None = None) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.reason = reason or f"signal {signal.Signals(signum).name}"


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def install_timeout_alarm(budget: Budget, patcher: Patcher) -> None:
    """SIGALRM interrupts even a script that hangs without touching a DataLoader; its stop
    is raised where an exception can travel (``limits/stop_delivery.py``)."""
    if budget.timeout_s is None or not _in_main_thread() or not hasattr(signal, "setitimer"):
        return

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        if not _held_during_fork(StopJob(TIMEOUT)):
            stop_delivery.raise_where_safe(StopJob(TIMEOUT), frame)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    # An alarm already set (pytest-timeout, the user's own) is put back afterwards,
    # less the time the job took.
    previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, budget.timeout_s)
    installed_at = time.monotonic()

    def undo() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        stop_delivery.disarm()
        signal.signal(signal.SIGALRM, previous)
        if previous_delay > 0:
            remaining = previous_delay - (time.monotonic() - installed_at)
            signal.setitimer(signal.ITIMER_REAL, max(remaining, 0.001), previous_interval)

    patcher.on_undo(undo)


# After the alarm, how long the script may take to unwind before the process is ended.
HARD_STOP_GRACE_S = 10.0


def start_hard_stop(budget: Budget, on_expiry: Callable[[], None]) -> Callable[[], None]:
    """A backstop for a script stuck in native code, where the alarm's exception is never
    raised: ``on_expiry`` runs on a timer thread. Returns the function that cancels it."""
    if budget.timeout_s is None:
        return lambda: None
    # Not after the wall clock was lifted since (a debugger attached).
    return start_backstop(
        budget.timeout_s + HARD_STOP_GRACE_S,
        lambda: budget.timeout_s is not None,
        on_expiry,
        "quickdev-hard-stop",
    )


def start_backstop(
    delay_s: float, still_wanted: Callable[[], bool], on_expiry: Callable[[], None], name: str
) -> Callable[[], None]:
    """``on_expiry`` on a thread of ours after ``delay_s``, unless cancelled first or no
    longer ``still_wanted``. Returns the function that cancels it."""
    cancelled = threading.Event()

    # Not a threading.Timer: waiting inside a function of ours marks the thread as ours,
    # so the profiler's trace leaves it out (profiling/own_frames.py).
    def wait_then_stop() -> None:
        if not cancelled.wait(delay_s) and still_wanted():
            on_expiry()

    own_thread(wait_then_stop, name).start()
    return cancelled.set


def start_server_watchdog(on_unresponsive: Callable[[], None]) -> Callable[[], None]:
    """End the job as killed (``SERVER_GONE``) once the language server that started it is
    gone, killed or crashed: nobody would see or cancel the run any more.

    The job is ended the way a cancel ends it (SIGTERM, turned into JobKilled); a script
    stuck in native code gets ``HARD_STOP_GRACE_S``, then ``on_unresponsive`` runs. A job
    started from a terminal has no server to watch. Returns the function that stops it.
    """
    owner = parse_process_token(os.environ.get(SERVER_PROCESS_ENV, ""))
    if owner is None:
        return lambda: None
    stopped = threading.Event()

    def watch() -> None:
        while not stopped.wait(SERVER_POLL_S):
            if same_process(*owner):
                continue
            log.warning("the language server (pid %d) is gone; ending the job", owner[0])
            _own_reasons[signal.SIGTERM] = SERVER_GONE
            os.kill(os.getpid(), signal.SIGTERM)
            if not stopped.wait(HARD_STOP_GRACE_S):
                on_unresponsive()
            return

    own_thread(watch, "quickdev-server-watchdog").start()
    return stopped.set


def cancel_timeout_alarm() -> None:
    """The script's call returned: no alarm, and no stop waiting for its next line."""
    if _in_main_thread() and hasattr(signal, "setitimer"):
        signal.setitimer(signal.ITIMER_REAL, 0)
        stop_delivery.disarm()


def install_kill_handlers(patcher: Patcher) -> None:
    """Turn SIGTERM/SIGINT into JobKilled so the result is written as ``killed``."""
    if not _in_main_thread():
        return

    def on_signal(signum: int, frame: FrameType | None) -> None:
        killed = JobKilled(signum, _own_reasons.pop(signum, None))
        if not _held_during_fork(killed):
            raise killed

    install_signal_handler(patcher, (signal.SIGTERM, signal.SIGINT), on_signal)
    patcher.set(os, "fork", fork_holding_stops)


# Inside os.fork, Python runs a signal's handler in fork's own hooks (logging's lock
# release among them), where an exception is printed and dropped ("Exception ignored in"):
# a Ctrl+C during the step-cost check's fork was lost, and logging's lock left held. While
# the main thread forks, a stop waits; it is raised in the parent once fork has returned.
_real_fork = os.fork
_forking = False
_held: BaseException | None = None


def fork_holding_stops() -> int:
    """``os.fork`` for the job's duration: a stop signalled during it is raised as it returns,
    in the parent (a child starts with no signal of its parent's pending)."""
    global _forking, _held
    if not _in_main_thread():  # the handlers run in the main thread, not in this fork
        return _real_fork()
    pid = -1  # the fork failed: the stop is raised all the same
    _forking = True
    try:
        pid = _real_fork()
    finally:
        _forking = False
        held, _held = _held, None
        if held is not None and pid != 0:
            raise held
    return pid


def _held_during_fork(stop: BaseException) -> bool:
    """Whether ``stop`` waits for the fork in progress to return (the first one only)."""
    global _held
    if not _forking:
        return False
    _held = _held or stop
    return True


def install_signal_handler(
    patcher: Patcher, signums: tuple[int, ...], handler: Callable[[int, FrameType | None], Any]
) -> None:
    """``handler`` for these signals until the patcher's undo puts the previous ones back."""
    for signum in signums:
        previous = signal.signal(signum, handler)
        patcher.on_undo(_restore_handler(signum, previous))


def _restore_handler(signum: int, handler: Any) -> Callable[[], None]:
    def restore() -> None:
        signal.signal(signum, handler)

    return restore


def ignore_further_kills() -> None:
    """While the result is written, a second Ctrl+C must not cut it short."""
    if _in_main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_IGN)
