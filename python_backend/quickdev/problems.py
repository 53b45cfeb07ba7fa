"""The problems a job's process met that keep it from a clean pass (rundir/verdict.py).

Any part of the job reports one where it meets it (the loss recorder, an observer that
failed, the file journal); the job takes them all when the script has ended and the
verdict decides the status. One list per process: a process the script starts, or a
rank, reports its own, and the job merges their results.
"""

from __future__ import annotations

import threading

from quickdev.rundir.result import Problem
from quickdev.rundir.verdict import QUICKDEV_ERROR, add_problem

_lock = threading.Lock()
_reported: list[Problem] = []


def report(problem: Problem) -> None:
    with _lock:
        add_problem(_reported, problem)


def own_error(feature: str, exc: BaseException, what: str | None = None) -> None:
    """Quickdev's ``feature`` failed with ``exc``: say so as Quickdev's error.
    ``what``: what failed, in words (default: "<feature> failed")."""
    report(
        Problem(
            kind=QUICKDEV_ERROR,
            feature=feature,
            message=what or f"{feature} failed",
            detail=f"{type(exc).__name__}: {exc}"[:500],
        )
    )


def take() -> list[Problem]:
    """The problems reported so far, and none kept (a forked child starts afresh)."""
    with _lock:
        taken = list(_reported)
        _reported.clear()
        return taken
