"""An exception as result.json reports it: where in the user's files it happened."""

from __future__ import annotations

import dataclasses
import os
import traceback
import types

from quickdev.limits.user_code import is_user_file
from quickdev.processes import EXIT_FAILED, EXIT_PASSED, PACKAGE_DIR
from quickdev.rundir.result import ErrorInfo, Frame, JobResult
from quickdev.rundir.step_cost import ERROR_ELSEWHERE, TRACEBACK_ELSEWHERE

_MAX_MESSAGE_CHARS = 2000
# torch's words for an operator with no CPU kernel: a custom CUDA extension on a CPU job.
_NO_CPU_KERNEL = "with arguments from the 'CPU' backend"


def describe(exc: BaseException) -> ErrorInfo:
    found = getattr(exc, ERROR_ELSEWHERE, None)
    if isinstance(found, ErrorInfo):
        # Found by the step-cost check's run of the full-size step on fake tensors: where
        # it happened there, not where the job raised it (limits/step_cost/probe.py).
        return found
    frames = [
        Frame(file=f.filename, line=f.lineno or 0, function=f.name)
        for f in traceback.extract_tb(exc.__traceback__)
    ]
    # The job's own frames (and runpy's) come first; the user sees from their code on,
    # without the job's frames in between (as ``user_traceback``).
    first_user = next((i for i, f in enumerate(frames) if is_user_file(f.file)), len(frames))
    if _script_not_compiled(exc, frames):
        frames = []
    elif first_user < len(frames):
        frames = [f for f in frames[first_user:] if not _is_own(f.file)]
    message = str(exc)
    file: str | None = None
    line: int | None = None
    if isinstance(exc, SyntaxError) and exc.filename:
        message = exc.msg or message
        file, line = exc.filename, exc.lineno
    else:
        user_frames = [f for f in frames if is_user_file(f.file)]
        if user_frames:
            file, line = user_frames[-1].file, user_frames[-1].line
    kind = type(exc).__qualname__
    if isinstance(exc, NotImplementedError) and _NO_CPU_KERNEL in message:
        kind, message = "DeviceUnavailable", _cuda_only_kernel(message)
    if len(message) > _MAX_MESSAGE_CHARS:
        message = message[: _MAX_MESSAGE_CHARS - 1] + "…"
    return ErrorInfo(type=kind, message=message, file=file, line=line, traceback=frames)


def labelled_error(label: str, error: ErrorInfo | None) -> ErrorInfo:
    """The error of one process of a job (a rank, a child), as the job's: "rank 1: …"."""
    if error is None:
        return ErrorInfo(type="ProcessFailed", message=f"{label} failed")
    return dataclasses.replace(error, message=f"{label}: {error.message}")


def _cuda_only_kernel(message: str) -> str:
    name = message.split("'")[1] if message.count("'") >= 2 else "an operator"
    return (
        f"the kernel {name} has no CPU implementation (a custom CUDA extension?); "
        "run with --device auto on a machine with CUDA"
    )


def user_traceback(exc: BaseException) -> str:
    """The traceback Python would print for ``exc`` had the script run alone: the job's
    frames (and runpy's) above the user's first frame left out, and so are the job's own
    frames after it: a wrapper of the step's modules in between, a CUDA stand-in that
    refuses an MPS call at the end (the user sees their line, then the library they
    called). It goes to the script's stderr, so the terminal and the editor's output
    channel show it where people look."""
    found = getattr(exc, TRACEBACK_ELSEWHERE, None)
    if isinstance(found, str) and found:
        return found
    entries: list[types.TracebackType] = []
    tb = exc.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    user = [i for i, e in enumerate(entries) if is_user_file(e.tb_frame.f_code.co_filename)]
    if not user and isinstance(exc, SyntaxError) and _is_users(exc.filename):
        # The script did not compile: Python shows the line and the error, no frames.
        return "".join(traceback.format_exception_only(type(exc), exc))
    if user:
        entries = [e for e in entries[user[0] :] if not _is_own(e.tb_frame.f_code.co_filename)]
    chained: types.TracebackType | None = None
    for entry in reversed(entries):
        chained = types.TracebackType(chained, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return "".join(traceback.format_exception(type(exc), exc, chained))


def _script_not_compiled(exc: BaseException, frames: list[Frame]) -> bool:
    """A SyntaxError in the user's file with no frame of theirs: the script itself did not
    compile, and the frames are ours and runpy's."""
    if not isinstance(exc, SyntaxError) or not _is_users(exc.filename):
        return False
    return not any(is_user_file(f.file) for f in frames)


def _is_users(filename: str | None) -> bool:
    return bool(filename) and is_user_file(str(filename))


def _is_own(filename: str) -> bool:
    return os.path.realpath(filename).startswith(str(PACKAGE_DIR) + os.sep)


def record_exit(result: JobResult, exc: SystemExit) -> int:
    """``sys.exit(0)``/``sys.exit()`` passes; any other code is a failure with that code."""
    code = exc.code
    if code is None or code == 0:
        result.status, result.stop_reason, result.exit_code = "passed", "completed", 0
        return EXIT_PASSED
    result.exit_code = code if isinstance(code, int) else 1
    result.status, result.stop_reason = "failed", "exit"
    result.error = describe(exc)
    if not isinstance(code, int):
        result.error.message = str(code)
    else:
        result.error.message = f"the script called sys.exit({code})"
    return EXIT_FAILED
