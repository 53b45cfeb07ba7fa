"""Quickdev's own Python frames taken out of a torch.profiler trace before it is saved.

With ``with_stack`` the profiler records every Python call as a ``python_function``
event, so the job's wrappers around the user's calls (the loader and step limits, the
device stand-ins, the observers) would show in the trace view and in every operator's
call stack: ``quickdev/limits/steps.py(102): backward`` above the user's
``loss.backward()``. The user wrote none of it; the trace should read as if the script
ran without us.

What is hidden:
- every frame in one of our files; its children hang from its nearest kept ancestor;
- runpy's frames, through which the job starts the script (``python train.py`` has none:
  they topped every stack);
- library frames our code calls for itself (JSON writes, the profiler's own step) when
  they lead to none of the user's code, so their time counts to the user's line that ran;
  but what a wrapper of ours calls directly is what the user called (torch's ``backward``
  under our ``backward``, the original ``Tensor.to``): it stays, under the user's line;
- a thread whose stacks hold our frames and none of the user's (the resource sampler).

Library frames that lead to the user's code (the DataLoader fetching the user's
``__getitem__`` through our loader limit) stay. Operators (``cpu_op``) are untouched:
their stacks are read from the kept frames around them.
"""

from __future__ import annotations

import gzip
import json
import os
import runpy
import sys
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from quickdev.limits.user_code import is_user_file
from quickdev.processes import PACKAGE_DIR
from quickdev.profiling.call_sites import FRAME, RunningFrame, apply_marks

Kind = Literal["ours", "user", "library"]

_RUNPY = os.path.realpath(runpy.__file__) if getattr(runpy, "__file__", None) else ""


@lru_cache(maxsize=4096)
def frame_kind(name: str) -> Kind:
    """Whose code a frame's event name points at, resolved against the job's sys.path
    (torch names files relative to the sys.path entry they were imported from)."""
    match = FRAME.match(name)
    if match is None:
        return "library"
    file = match.group(1)
    if file.startswith("<"):
        return "ours" if file == "<frozen runpy>" else "library"
    own = str(PACKAGE_DIR) + os.sep
    candidates = [file] if os.path.isabs(file) else []
    roots = [*sys.path, str(PACKAGE_DIR.parent)]
    candidates += [os.path.join(root or os.curdir, file) for root in roots]
    for path in candidates:
        if os.path.isfile(path):
            path = os.path.realpath(path)
            if path.startswith(own) or path == _RUNPY:
                return "ours"
            return "user" if is_user_file(path) else "library"
    return "library"


def hide_own_frames(trace: dict[str, Any], kind: Callable[[str], Kind] = frame_kind) -> int:
    """Removes our frames from ``trace`` in place (see the module's text); returns how many
    events were removed."""
    events = trace.get("traceEvents")
    if not isinstance(events, list):
        return 0
    frames: dict[Any, dict[str, Any]] = {}
    for e in events:
        if isinstance(e, dict) and e.get("cat") == "python_function":
            args = e.get("args")
            if isinstance(args, dict) and args.get("Python id") is not None:
                frames[args["Python id"]] = e
    if not frames:
        return 0

    def parent(fid: Any) -> Any:
        return frames[fid]["args"].get("Python parent id")

    children: dict[Any, list[Any]] = {}
    for fid in frames:
        children.setdefault(parent(fid), []).append(fid)
    kinds = {fid: kind(str(e.get("name", ""))) for fid, e in frames.items()}

    # Bottom up (iteratively: stacks can be deep): which subtrees reach user code or ours.
    has_user: dict[Any, bool] = {}
    has_ours: dict[Any, bool] = {}
    roots = [fid for fid in frames if parent(fid) not in frames]
    order: list[Any] = []
    stack = list(roots)
    while stack:
        fid = stack.pop()
        order.append(fid)
        stack.extend(children.get(fid, ()))
    for fid in reversed(order):
        kids = children.get(fid, ())
        has_user[fid] = kinds[fid] == "user" or any(has_user[k] for k in kids)
        has_ours[fid] = kinds[fid] == "ours" or any(has_ours[k] for k in kids)

    # Top down: hide, and give each kept frame its nearest kept ancestor.
    hidden: set[Any] = set()
    kept_parent: dict[Any, Any] = {}
    # (frame, nearest kept ancestor, parent hidden, parent is a wrapper: one of our frames
    # called straight from kept code, like our backward() called from the user's line)
    walk: list[tuple[Any, Any, bool, bool]] = []
    for fid in roots:
        # A thread of ours: nothing the user wrote runs on it.
        if has_ours[fid] and not has_user[fid]:
            hidden.update(_subtree(fid, children))
            continue
        walk.append((fid, parent(fid), False, False))
    while walk:
        fid, above, parent_hidden, parent_wraps = walk.pop()
        ours = kinds[fid] == "ours"
        # What a wrapper calls directly is what the user called (torch's backward, the
        # DataLoader's next): kept. Deeper down, library calls of ours are bookkeeping.
        bookkeeping = parent_hidden and not parent_wraps and not has_user[fid]
        hide = ours or bookkeeping
        if hide:
            hidden.add(fid)
        else:
            kept_parent[fid] = above
        for kid in children.get(fid, ()):
            walk.append((kid, above if hide else fid, hide, ours and not parent_hidden))

    for fid, above in kept_parent.items():
        frames[fid]["args"]["Python parent id"] = above
    removed = {id(frames[fid]) for fid in hidden}
    trace["traceEvents"] = [e for e in events if id(e) not in removed]
    return len(removed)


def pack_without_own_frames(
    plain: Path, packed: Path, running: Iterable[RunningFrame] = ()
) -> None:
    """Reads the profiler's exported trace, applies the job's marks (its own work out,
    the user's call sites in; ``running``: the user frames that ran when recording
    started), hides our frames and writes it gzipped."""
    with plain.open("rb") as src:
        trace = json.load(src)
    apply_marks(trace, lambda name: frame_kind(name) == "user", running)
    hide_own_frames(trace)
    with gzip.open(packed, "wt", encoding="utf-8", compresslevel=6) as out:
        json.dump(trace, out, separators=(",", ":"))


def _subtree(root: Any, children: dict[Any, list[Any]]) -> list[Any]:
    found, stack = [], [root]
    while stack:
        fid = stack.pop()
        found.append(fid)
        stack.extend(children.get(fid, ()))
    return found
