"""Ending a job early: the wall-clock alarm, kill signals and the hard stop.

The stop exceptions derive from BaseException so that a user's ``except Exception``
around the training loop cannot swallow them.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from quickdev.limits.budget import Budget, StopJob
from quickdev.limits.patching import Patcher


class JobKilled(BaseException):
    """SIGTERM or SIGINT arrived; the job ends as ``killed``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def install_timeout_alarm(budget: Budget, patcher: Patcher) -> None:
    """SIGALRM interrupts even a script that hangs without touching a DataLoader."""
    if budget.timeout_s is None or not _in_main_thread() or not hasattr(signal, "setitimer"):
        return

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise StopJob("timeout")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    # An alarm already set (pytest-timeout, the user's own) is put back afterwards,
    # less the time the job took.
    previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, budget.timeout_s)
    installed_at = time.monotonic()

    def undo() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
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
    delay_s = budget.timeout_s + HARD_STOP_GRACE_S
    cancelled = threading.Event()

    # Not a threading.Timer: waiting inside a function of ours marks the thread as ours,
    # so the profiler's trace leaves it out (profiling/own_frames.py).
    def wait_then_stop() -> None:
        if not cancelled.wait(delay_s):
            on_expiry()

    threading.Thread(target=wait_then_stop, name="quickdev-hard-stop", daemon=True).start()
    return cancelled.set


def cancel_timeout_alarm() -> None:
    if _in_main_thread() and hasattr(signal, "setitimer"):
        signal.setitimer(signal.ITIMER_REAL, 0)


def install_kill_handlers(patcher: Patcher) -> None:
    """Turn SIGTERM/SIGINT into JobKilled so the result is written as ``killed``."""
    if not _in_main_thread():
        return

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise JobKilled(signum)

    install_signal_handler(patcher, (signal.SIGTERM, signal.SIGINT), on_signal)


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
