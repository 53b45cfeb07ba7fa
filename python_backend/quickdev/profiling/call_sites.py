"""The job's marks in a trace (limits/profiler_marks.py) turned into what they mean.

- A range marked as the job's own work goes, with everything it holds on its thread
  (operators, Python frames, flows): the non-finite check of a batch is not the user's.
- A call-site mark says which line of a user frame was running when a call went by:
  the frame's child that holds the mark (the call) gets a parent frame of its own named
  for that line, ``train.py(32): train`` under ``train.py(33): train``, so the call's
  operators point at the line that ran.
- The marks themselves go.
- A user frame that was running when recording started is named by torch for the line it
  was at then (the ``optimizer.step()`` that stepped the profiler), so everything the
  frame did later showed at that line; it is named for its ``def`` line instead, as torch
  names every frame it sees start: its calls the job did not mark point at the function,
  not at a line that did not run them.

Runs before our own frames are hidden (own_frames.py): a call site's new frame is the
user's, and what it holds is hidden or kept by the usual rules.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable
from pathlib import PurePath
from types import FrameType
from typing import Any, NamedTuple

from quickdev.limits.profiler_marks import CALL_SITE, MARK_PREFIX, OWN_WORK
from quickdev.limits.user_code import is_user_file

Event = dict[str, Any]
# "file(line): function", as torch names Python frames; C functions have no file.
FRAME = re.compile(r"^(.+)\((\d+)\): (.*)$")


class RunningFrame(NamedTuple):
    """A user frame on the stack when the profiler may have started recording."""

    file: str  # absolute
    line: int  # the line it was at
    function: str
    def_line: int


def running_user_frames(frame: FrameType | None = None) -> set[RunningFrame]:
    """The user's frames on the calling thread's stack now."""
    found: set[RunningFrame] = set()
    current = frame if frame is not None else sys._getframe(1)
    while current is not None:
        code = current.f_code
        if is_user_file(code.co_filename):
            found.add(
                RunningFrame(code.co_filename, current.f_lineno, code.co_name, code.co_firstlineno)
            )
        current = current.f_back  # type: ignore[assignment]
    return found


def apply_marks(
    trace: dict[str, Any],
    is_user_frame: Callable[[str], bool],
    running: Iterable[RunningFrame] = (),
) -> None:
    events = trace.get("traceEvents")
    if not isinstance(events, list):
        return
    _name_by_def_line(events, list(running))
    marks = [e for e in events if _is_mark(e)]
    if not marks:
        return
    removed = _own_work(events, [m for m in marks if m.get("name") == OWN_WORK])
    events = [e for e in events if id(e) not in removed and not _is_mark(e)]
    frames = [e for e in events if e.get("cat") == "python_function" and _span(e) is not None]
    sites = [m for m in marks if str(m.get("name", "")).startswith(CALL_SITE)]
    events.extend(_call_site_frames(frames, sites, is_user_frame))
    trace["traceEvents"] = events


def _is_mark(event: Any) -> bool:
    return isinstance(event, dict) and str(event.get("name", "")).startswith(MARK_PREFIX)


def _span(event: Event) -> tuple[float, float] | None:
    try:
        start = float(event["ts"])
        return start, start + float(event.get("dur", 0.0))
    except (KeyError, TypeError, ValueError):
        return None


def _thread(event: Event) -> tuple[Any, Any]:
    return event.get("pid"), event.get("tid")


def _own_work(events: list[Any], ranges: list[Event]) -> set[int]:
    """ids of the events inside the job's own-work ranges, on their threads."""
    spans: dict[tuple[Any, Any], list[tuple[float, float]]] = {}
    for mark in ranges:
        span = _span(mark)
        if span is not None:
            spans.setdefault(_thread(mark), []).append(span)
    removed: set[int] = set()
    for e in events:
        if not isinstance(e, dict) or _thread(e) not in spans:
            continue
        start = _start(e)
        if start is None:
            continue
        end = start + float(e.get("dur", 0.0) or 0.0)
        if any(s <= start and end <= t for s, t in spans[_thread(e)]):
            removed.add(id(e))
    return removed


def _start(event: Event) -> float | None:
    try:
        return float(event["ts"])
    except (KeyError, TypeError, ValueError):
        return None


def _call_site_frames(
    frames: list[Event], sites: list[Event], is_user_frame: Callable[[str], bool]
) -> list[Event]:
    by_thread: dict[tuple[Any, Any], list[Event]] = {}
    for frame in frames:
        by_thread.setdefault(_thread(frame), []).append(frame)
    next_id = 1 + max((_id(f) for f in frames if isinstance(_id(f), int)), default=0)
    added: list[Event] = []
    wrapped: set[int] = set()
    for site in sorted(sites, key=lambda e: _start(e) or 0.0):
        at = _start(site)
        line = str(site.get("name", ""))[len(CALL_SITE) :]
        if at is None or not line.isdigit():
            continue
        enclosing = [f for f in by_thread.get(_thread(site), []) if _holds(f, at)]
        users = [f for f in enclosing if is_user_frame(str(f.get("name", "")))]
        if not users:
            continue
        user = max(users, key=lambda f: float(f["ts"]))  # the innermost
        call = next((f for f in enclosing if f["args"].get("Python parent id") == _id(user)), None)
        match = FRAME.match(str(user.get("name", "")))
        if call is None or id(call) in wrapped or match is None:
            continue
        wrapped.add(id(call))
        frame = {
            **{k: v for k, v in call.items() if k != "args"},
            "name": f"{match.group(1)}({line}): {match.group(3)}",
            "args": {"Python parent id": _id(user), "Python id": next_id},
        }
        call["args"]["Python parent id"] = next_id
        next_id += 1
        added.append(frame)
    return added


def _id(frame: Event) -> Any:
    args = frame.get("args")
    return args.get("Python id") if isinstance(args, dict) else None


def _holds(frame: Event, at: float) -> bool:
    span = _span(frame)
    return span is not None and span[0] <= at <= span[1]


def _name_by_def_line(events: list[Any], running: list[RunningFrame]) -> None:
    if not running:
        return
    for e in events:
        if not isinstance(e, dict) or e.get("cat") != "python_function":
            continue
        match = FRAME.match(str(e.get("name", "")))
        if match is None:
            continue
        file, line, function = match.group(1), int(match.group(2)), match.group(3)
        for frame in running:
            if (frame.line, frame.function) == (line, function) and _same_file(frame.file, file):
                e["name"] = f"{file}({frame.def_line}): {function}"
                break


def _same_file(absolute: str, named: str) -> bool:
    """Whether torch's name for a file (relative to a sys.path entry) is ``absolute``."""
    return PurePath(absolute).as_posix().endswith("/" + PurePath(named).as_posix().lstrip("/"))
