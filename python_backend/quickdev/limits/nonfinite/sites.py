"""Where an operation ran, in the user's terms: their file and line, and the operation's
name; and where a forward call ran, kept for its backward. (The module whose forward ran
it: ``modules.py``.)"""

from __future__ import annotations

from collections.abc import Callable
from types import FrameType
from typing import Any

from torch import nn
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


_NAMES: dict[Any, str] = {}


def op_name(func: Any) -> str:
    """``torch.Tensor.masked_fill``: the name the user's code calls it by."""
    try:
        return _NAMES[func]
    except (KeyError, TypeError):
        pass
    try:
        name = resolve_name(func)
    except Exception:  # an object torch has no name for
        name = None
    name = name or f"torch.{getattr(func, '__name__', type(func).__name__)}"
    try:
        if len(_NAMES) < 10_000:
            _NAMES[func] = name
    except TypeError:  # not hashable
        pass
    return name


def where(frame: FrameType | None) -> str:
    """``train.py:42``: the user's line, for a sentence."""
    if frame is None:
        return "a line outside your code"
    return f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno}"


class ForwardSite:
    """Where a forward call ran, kept with its autograd nodes until backward. The frame
    itself is let go when the training step ends (a frame holds its locals: the step's
    tensors)."""

    __slots__ = ("file", "frame", "func", "function", "line", "module", "step")

    def __init__(
        self,
        func: Callable[..., Any],
        frame: FrameType | None,
        module: nn.Module | None,
        step: int,
    ) -> None:
        self.func = func
        self.frame = frame
        self.line = frame.f_lineno if frame else None
        self.file = frame.f_code.co_filename if frame else None
        self.function = frame.f_code.co_name if frame else None
        self.module = module
        self.step = step

    @property
    def frames(self) -> FrameChain | None:
        """The user's frames as they were (the call's own line, its callers' lines now)."""
        frame = self.frame
        if frame is None or self.line is None:
            return None
        outer = frame_chain(frame.f_back) if frame.f_back is not None else []
        return [*outer, (frame, self.line)]
