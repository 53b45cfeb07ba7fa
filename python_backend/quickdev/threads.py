"""Quickdev's own threads inside the job: the sampler, the hard stop, the server watchdog."""

from __future__ import annotations

import threading
from collections.abc import Callable


def own_thread(target: Callable[[], None], name: str) -> threading.Thread:
    """A daemon thread the user's debugger never shows or stops.

    pydevd's own marks: the editor lists it neither in Threads nor in the Call Stack, does
    not trace it (a second paused thread would take the editor's focus when the user steps),
    and the user's ``threading.enumerate()`` does not see it under a debugger.
    """
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.pydev_do_not_trace = True  # type: ignore[attr-defined]
    thread.is_pydev_daemon_thread = True  # type: ignore[attr-defined]
    thread.quickdev_own = True  # type: ignore[attr-defined]
    return thread


def is_own_thread(thread: threading.Thread) -> bool:
    """Whether Quickdev started it (not the user's code): it writes only to the run dir."""
    return getattr(thread, "quickdev_own", False)
