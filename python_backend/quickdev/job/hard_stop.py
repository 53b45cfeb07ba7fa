"""Ending a job whose script did not unwind when asked (stuck in native code).

The wall-clock deadline bounds the user's script. Once the script's call has returned or
raised, the job's own finishing (ending the script's processes, the journal's restore of
the user's files, the memory forecast, the result) is no longer the hard stop's: cutting
it half-way would leave a user's file half-restored, or a passed run recorded as stopped.
``Ending`` makes it exactly one of the two: the job finishing, or a hard stop.

What bounds the finishing instead: ending the script's processes waits for them only up
to the deadline, then a few seconds' SIGTERM/SIGKILL grace; the restore is as long as the
files the script changed (never cut: a restore cut short leaves the user's files changed
until the next start recovers them); the work after it runs under ``FINISH_LIMIT_S``.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from quickdev import problems, unwritten
from quickdev.job import signals
from quickdev.job.recorded import copy_recorded, settle_verdict
from quickdev.limits.recorder import Recorder
from quickdev.processes import EXIT_PASSED, peak_rss_mb
from quickdev.rundir.result import JobResult, Problem
from quickdev.rundir.verdict import QUICKDEV_ERROR

if TYPE_CHECKING:
    from quickdev.job.children.following import FollowedChildren

log = logging.getLogger(__name__)

# The job's work after the restore (the memory forecast's replays, a profile's export,
# the result): each is bounded by its own count or size; this is the backstop for one
# stuck in native code, far above what they take (a forecast of a 2000-layer model: ~30 s).
FINISH_LIMIT_S = 600.0


@dataclass(frozen=True)
class HardStop:
    """How a job that did not unwind when asked is recorded as it is ended."""

    status: Literal["stopped", "killed"]
    reason: str
    exit_code: int
    message: str


TIMEOUT_STOP = HardStop(
    "stopped", "timeout", EXIT_PASSED, "stopped at the timeout; the script did not respond"
)
SERVER_GONE_STOP = HardStop(
    "killed",
    signals.SERVER_GONE,
    128 + signal.SIGTERM,
    "the language server that started this job is gone; the script did not respond",
)


class Ending:
    """Who ends the job: a hard stop (from a timer thread) while the script runs, the job
    itself once the script's call has unwound. Never both at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._finishing = False

    def hard_stop(self, stop: Callable[[], None]) -> None:
        """Run ``stop`` (it ends the process) unless the job is already finishing."""
        with self._lock:
            if self._finishing:
                log.info("no hard stop: the script has ended and the job is finishing")
                return
            stop()

    def script_ended(self) -> None:
        """From here the job finishes by itself. Where a hard stop is already under way
        this waits for good: the hard stop records the result and ends the process."""
        with self._lock:
            self._finishing = True


def hard_stop(
    run_dir: Path,
    result: JobResult,
    recorder: Recorder | None,
    followed: FollowedChildren | None,
    stop: HardStop,
    started: float,
    print_json: bool,
) -> None:
    """The script ignored the request to end (stuck in native code): record, report, end
    the process."""
    log.warning("the script did not stop (%s); ending the process", stop.reason)
    result.status, result.stop_reason = stop.status, stop.reason
    if followed is not None:
        followed.end(script_passed=False)
    end_limits(result, recorder)
    copy_recorded(result, recorder)
    if followed is not None:
        followed.merge(result)
    exit_code = settle_verdict(result, recorder, stop.exit_code, main=False)
    end_process(run_dir, result, started, f"{stop.message}, so", print_json, exit_code)


def finish_too_long(
    run_dir: Path, result: JobResult, started: float, print_json: bool, exit_code: int
) -> None:
    """The job's work after the restore is stuck: the result as it stands, then the end."""
    log.warning("the job's finishing did not end within %.0f s; ending the process", FINISH_LIMIT_S)
    message = f"the job's finishing did not end within {FINISH_LIMIT_S:.0f} s, so"
    end_process(run_dir, result, started, message, print_json, exit_code)


def end_process(
    run_dir: Path, result: JobResult, started: float, why: str, print_json: bool, exit_code: int
) -> None:
    result.duration_s = round(time.perf_counter() - started, 3)
    result.peak_rss_mb = peak_rss_mb()
    unwritten.write_result(result, run_dir)
    stderr = sys.__stderr__ or sys.stderr
    stderr.write(f"quickdev: {why} the process was ended (run dir: {run_dir})\n")
    not_written = unwritten.line(run_dir)
    if not_written:
        stderr.write(not_written + "\n")
    stderr.flush()
    if print_json:
        out = sys.__stdout__ or sys.stdout
        out.write(json.dumps(result.to_dict(), default=str) + "\n")
        out.flush()
    os._exit(exit_code)


def end_limits(result: JobResult, recorder: Recorder | None) -> None:
    """Put the user's files back; a file that could not be is the result's error."""
    if recorder is None:
        return
    recorder.end()
    for note in recorder.notes:
        log.warning("file journal: %s", note)
        print(note, file=sys.stderr, flush=True)
    if recorder.problems:
        log.error("file journal: %s", "; ".join(recorder.problems))
        more = f" (and {len(recorder.problems) - 1} more)" if len(recorder.problems) > 1 else ""
        problems.report(
            Problem(
                kind=QUICKDEV_ERROR,
                feature="the file journal",
                message=f"the file journal failed: {recorder.problems[0]}{more}",
            )
        )
