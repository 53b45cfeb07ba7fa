"""Raising a stop from a signal handler only where an exception can travel back to the job.

A Python signal handler runs wherever the main thread is when the signal arrives, also
inside native code that called back into Python: a C++ extension's initialisation during an
import, a pybind11 or ctypes callback, a finalizer. An exception raised there cannot pass its
native caller: pybind11 turns it into a C++ exception that aborts the process ("terminate
called after throwing an instance of 'pybind11::error_already_set'", on a GPU machine whose
timeout fell while torch was being imported), ctypes prints and drops it, a finalizer drops
it. Then no result is written and nothing is put back through the job's own end.

Python cannot see native frames. So a stop is raised at once only where the interrupted code
is the user's, or the standard library called by it (a sleep, a wait, a read): the user's own
exceptions leave from there, so whatever called that code carries them (torch carries a
user's hook's or mode's exception back to the script). Anywhere else (a library, torch's own
Python, an import in progress, the job's own hooks, a finalizer) it waits for the next line
the user's code runs, through a line trace armed for that moment; a line runs only once
every native call made from it has returned. Before the script starts (the job's imports
and set-up) no trace is set, which would slow that work down: the job raises the stop
itself as the script is about to start (``script_starting``), from its own Python. The
hard stop (``job/hard_stop.py``) stays the backstop for a script that never comes back to
its own code. Under a debugger or another tracer the trace is theirs, so the stop is
raised at once, as before.
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

from quickdev.limits.loops.library import tracing_free
from quickdev.limits.user_code import is_standard_library_file, is_user_file


def raise_where_safe(stop: BaseException, frame: FrameType | None) -> None:
    """From a signal handler interrupting ``frame``: raise ``stop`` now where that is safe,
    else at the next line of the user's code (one stop waits at a time; a later one while
    it waits changes nothing)."""
    if _pending is not None:
        return
    if frame is None or raising_is_safe(frame) or not tracing_free():
        raise stop
    if _script_running:
        _arm(stop, frame)
    else:
        _wait_for_the_script(stop)


def script_starting() -> None:
    """The job's set-up is done and the script is about to run: a stop that came during
    the set-up is raised here; from now on one waits for the script's next line."""
    global _script_running
    waiting = _pending
    disarm()
    if waiting is not None:
        raise waiting.stop
    _script_running = True


def raising_is_safe(frame: FrameType) -> bool:
    """Whether an exception raised in ``frame`` now travels back through Python callers: the
    user's code is running there, directly or through the standard library, and not as a
    finalizer (which drops what it raises)."""
    current: FrameType | None = frame
    while current is not None and is_standard_library_file(current.f_code.co_filename):
        if current.f_code.co_name == "__del__":
            return False
        current = current.f_back
    return current is not None and _raises_into_callers(current)


def _raises_into_callers(frame: FrameType) -> bool:
    return is_user_file(frame.f_code.co_filename) and frame.f_code.co_name != "__del__"


class _Pending:
    """A stop waiting for the next line of the user's code."""

    def __init__(self, stop: BaseException) -> None:
        self.stop = stop
        self.traced: list[FrameType] = []

    def on_call(self, frame: FrameType, event: str, arg: Any) -> Any:
        """The thread's trace: each new frame of the user's code gets the line trace."""
        return self.on_line if _raises_into_callers(frame) else None

    def on_line(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event != "line":
            return self.on_line
        disarm()
        raise self.stop  # a trace function's exception is raised in the traced frame


_pending: _Pending | None = None
_script_running = False  # between script_starting() and disarm()


def _wait_for_the_script(stop: BaseException) -> None:
    global _pending
    _pending = _Pending(stop)


def _arm(stop: BaseException, frame: FrameType) -> None:
    global _pending
    pending = _Pending(stop)
    current: FrameType | None = frame
    while current is not None:  # the user's frames already running, each at its next line
        if _raises_into_callers(current):
            current.f_trace = pending.on_line
            current.f_trace_lines = True
            pending.traced.append(current)
        current = current.f_back
    _pending = pending
    sys.settrace(pending.on_call)


def disarm() -> None:
    """No stop waits any more (it was raised, or the script's call returned first)."""
    global _pending, _script_running
    pending, _pending = _pending, None
    _script_running = False
    if pending is None:
        return
    if sys.gettrace() == pending.on_call:
        sys.settrace(None)
    for frame in pending.traced:
        frame.f_trace = None
    pending.traced.clear()
