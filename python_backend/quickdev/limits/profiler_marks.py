"""Marks the job leaves in a torch.profiler trace, read back when the trace is saved
(profiling/call_sites.py): its own torch work, and the line of the user's code that ran.

- ``own_work_mark()``: torch work the job does for itself inside the user's step (the
  non-finite check of a batch, reading a loss; ``limits/own_work.py``): marked so it is
  taken out of the trace, not counted against the user's line that happened to be running.
- ``mark_call_site()``: the profiler names a Python frame by the line it was at when
  recording started (or by its ``def`` line), so the ops of ``loss.backward()`` showed
  under whatever line the step was at then. Where the job sees a user's call go by
  (backward, a module's forward, an optimizer step, the next batch) it marks the line
  of the innermost user frame; the trace then gets a frame for that line around the
  call.

Both cost nothing while no profiler records.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import torch

from quickdev.limits.user_code import is_user_file

# Names of the profiler ranges; profiling/call_sites.py takes every range so named out.
MARK_PREFIX = "quickdev::"
OWN_WORK = MARK_PREFIX + "own"
CALL_SITE = MARK_PREFIX + "line "


def recording() -> bool:
    return bool(torch._C._autograd._profiler_enabled())


@contextlib.contextmanager
def own_work_mark() -> Iterator[None]:
    if not recording():
        yield
        return
    with torch.profiler.record_function(OWN_WORK):
        yield


def mark_call_site() -> None:
    """Marks the line the innermost user frame is at (nothing outside the user's code)."""
    if not recording():
        return
    frame = sys._getframe(1)
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is not None:
        with torch.profiler.record_function(f"{CALL_SITE}{frame.f_lineno}"):
            pass
