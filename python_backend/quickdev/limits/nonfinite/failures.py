"""The hunt's own failures: Quickdev's errors, never the script's.

A check that raises (a tensor the hunt does not know, a graph it cannot read) must not fail
the user's call, and must not pass for "nothing found" either. The first failure is said
once, in one line that names what the hunt could not follow and whose error it is, and
reported as the job's problem (``quickdev_error``, so the verdict is not a clean pass);
the hunt goes on: an operation it could not follow is left out, the others are followed.
After ``MAX_FAILURES`` the hunt stops following operations (one failing on every call
would cost more than it tells) and checks only the places where a value counts: the loss,
the gradients and the parameters.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable

from quickdev import problems
from quickdev.rundir.result import NAN_HUNT, Problem

log = logging.getLogger(__name__)

FEATURE = NAN_HUNT
MAX_FAILURES = 100
WHOSE = "this is Quickdev's error, not your code's"


class Failures:
    def __init__(self, step: Callable[[], int]) -> None:
        self._step = step
        self.count = 0

    @property
    def following(self) -> bool:
        return self.count < MAX_FAILURES

    def failed(self, what: str, file: str | None = None, line: int | None = None) -> None:
        """Called in an ``except`` block: the hunt could not follow ``what`` (``torch.exp``,
        ``the backward of torch.sqrt``, ``a DataLoader batch``) at the user's line."""
        self.count += 1
        try:
            self._said(what, file, line)
        except Exception:  # saying it must not fail the user's call either
            log.exception("the NaN hunt's failure could not be reported")

    def _said(self, what: str, file: str | None, line: int | None) -> None:
        error = sys.exc_info()[1]
        if self.count > 1:
            log.debug("the NaN hunt could not follow %s either", what, exc_info=True)
            if self.count == MAX_FAILURES:
                log.warning(
                    "the NaN hunt failed %d times: it follows no more operations and checks "
                    "only the loss, the gradients and the parameters",
                    MAX_FAILURES,
                )
            return
        log.warning("the NaN hunt could not follow %s", what, exc_info=True)
        step = self._step()
        at = f" at {os.path.basename(file)}:{line}" if file and line else ""
        when = "before training" if step == 0 else f"step {step}"
        # The exception's text goes to job.log and the problem's detail, not to this line:
        # torch's words there are advice for the code that made the call, which was ours.
        what_at = f"{what}{at} ({when}"
        kind = type(error).__name__ if error else "an error"
        stderr = sys.__stderr__ or sys.stderr
        stderr.write(
            f"quickdev: the NaN hunt could not follow {what_at}, {kind}); {WHOSE}. It goes "
            "on, and still checks the loss, the gradients and the parameters (see job.log)\n"
        )
        problems.report(
            Problem(
                kind="quickdev_error",
                feature=FEATURE,
                message=(
                    f"the NaN hunt could not follow {what_at}); it went on without it and "
                    "still checked the loss, the gradients and the parameters"
                ),
                file=file,
                line=line,
                step=step,
                detail=_last_line(error),
            )
        )


def _last_line(error: BaseException | None) -> str:
    if error is None:
        return "an unknown error"
    lines = [line for line in str(error).splitlines() if line.strip()]
    text = lines[-1] if lines else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
