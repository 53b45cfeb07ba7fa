"""What the NaN hunt raises once a non-finite value reached the loss, a gradient or a
parameter: the origin, as result.json reports it, and the user's frames that ran it."""

from __future__ import annotations

from types import FrameType

from quickdev.rundir.nonfinite_origin import NonfiniteOrigin
from quickdev.rundir.result import ErrorInfo, Frame

# The error type a found origin is reported as (result.json, the editor's diagnostic).
ERROR_TYPE = "NonFiniteValue"

# (frame, the line it was at), outermost first: the user's code when the operation ran.
FrameChain = list[tuple[FrameType, int]]


class NonFiniteFound(BaseException):
    """The hunt found its origin; the job ends as failed. A BaseException, like StopJob, so
    that a script's ``except Exception`` around its training step cannot swallow it."""

    def __init__(self, origin: NonfiniteOrigin, frames: FrameChain) -> None:
        super().__init__(origin.message)
        self.origin = origin
        self.frames = frames

    def error(self) -> ErrorInfo:
        frames = [
            Frame(file=frame.f_code.co_filename, line=line, function=frame.f_code.co_name)
            for frame, line in self.frames
        ]
        origin = self.origin
        return ErrorInfo(
            type=ERROR_TYPE,
            message=origin.message,
            file=origin.file,
            line=origin.line,
            traceback=frames,
        )
