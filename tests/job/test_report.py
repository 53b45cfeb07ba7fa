"""A failed run's error reads the same in the terminal's summary and in the editor."""

from __future__ import annotations

from quickdev.job.report import summarize
from quickdev.rundir.result import ErrorInfo, JobResult
from quickdev.server.types import Failure

ERROR = ErrorInfo(
    type="RuntimeError",
    message="mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)\n  in layer fc\n",
    file="/project/train.py",
    line=17,
)


def test_the_terminal_shows_the_first_line_and_where() -> None:
    result = JobResult(id="r1", status="failed", script="/project/train.py", error=ERROR)
    error_lines = [line for line in summarize(result).splitlines() if "error:" in line]
    assert error_lines == [
        "  error: RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)"
        " at /project/train.py:17"
    ]


def test_the_editor_shows_the_whole_message_at_its_line() -> None:
    failure = Failure.of_error(ERROR)
    assert failure.message == (
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)\n  in layer fc"
    )
    assert (failure.file, failure.line) == ("/project/train.py", 17)
