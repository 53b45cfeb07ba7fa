"""Where an operation ran, in the user's terms: their file and line, and the operation's
name. (The module whose forward ran it: ``modules.py``.)"""

from __future__ import annotations

from types import FrameType
from typing import Any

from torch.overrides import resolve_name

from quickdev.limits.nonfinite.found import FrameChain
from quickdev.limits.user_code import is_user_file


def user_frame(frame: FrameType | None) -> FrameType | None:
    """The innermost frame in the user's files, from ``frame`` outwards."""
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            return frame
        frame = frame.f_back
    return None


def frame_chain(frame: FrameType | None) -> FrameChain:
    """``frame`` and its callers up to the outermost user frame, outermost first, each
    with the line it is at now (the job's own frames above the script are left out)."""
    chain: FrameChain = []
    while frame is not None:
        chain.append((frame, frame.f_lineno))
        frame = frame.f_back
    users = [i for i, (f, _) in enumerate(chain) if is_user_file(f.f_code.co_filename)]
    outermost = users[-1] if users else len(chain) - 1
    return list(reversed(chain[: outermost + 1]))


def op_name(func: Any) -> str:
    try:
        name = resolve_name(func)
    except Exception:  # an object torch has no name for
        name = None
    return name or f"torch.{getattr(func, '__name__', type(func).__name__)}"
