"""The one rule (rundir/verdict.py): which status a job's outcome and problems give."""

from __future__ import annotations

import pytest
from quickdev.processes import EXIT_FAILED, EXIT_PASSED, EXIT_QUICKDEV_ERROR, exit_status
from quickdev.rundir.result import ErrorInfo, JobResult, Problem
from quickdev.rundir.verdict import decide, headline

NAN = Problem(kind="nonfinite_loss", message="the training loss became nan at step 3", step=3)
UNTRAINED = Problem(kind="no_training", message="the script built an optimizer and ended …")
OURS = Problem(kind="quickdev_error", feature="the profiler", message="the profiler failed")


def _result(status: str, *problems: Problem, error: ErrorInfo | None = None) -> JobResult:
    return JobResult(id="r", status=status, stop_reason="completed", problems=list(problems),
                     error=error)  # fmt: skip


@pytest.mark.parametrize(
    ("status", "problems", "expected", "error_type"),
    [
        ("passed", [], "passed", None),
        ("stopped", [], "stopped", None),
        ("passed", [OURS, UNTRAINED, NAN], "failed", "NonFiniteLoss"),  # 2 before 3 and 4
        ("stopped", [NAN], "failed", "NonFiniteLoss"),  # a NaN before a budget stop
        ("passed", [OURS, UNTRAINED], "failed", "NoTrainingStep"),  # 3 before 4
        ("stopped", [UNTRAINED], "stopped", None),  # a budget that stopped it says why
        ("passed", [OURS], "error", None),
        ("stopped", [OURS], "error", None),
        ("killed", [NAN, OURS], "killed", None),
    ],
)
def test_the_first_rule_that_applies_decides(
    status: str, problems: list[Problem], expected: str, error_type: str | None
) -> None:
    result = _result(status, *problems)
    decide(result)
    assert result.status == expected
    assert (result.error.type if result.error else None) == error_type
    decide(result)  # idempotent: a merge or a hard stop may decide again
    assert result.status == expected


def test_the_scripts_own_failure_comes_first() -> None:
    raised = ErrorInfo(type="RuntimeError", message="shapes cannot be multiplied")
    result = _result("failed", NAN, OURS, error=raised)
    assert not decide(result)
    assert (result.status, result.error) == ("failed", raised)


@pytest.mark.parametrize(
    ("status", "script_code", "expected"),
    [
        ("passed", EXIT_PASSED, EXIT_PASSED),
        ("stopped", EXIT_PASSED, EXIT_PASSED),
        ("failed", EXIT_PASSED, EXIT_FAILED),  # the verdict failed a script that ended well
        ("failed", 7, 7),  # the script's own sys.exit(7) keeps its code
        ("error", EXIT_PASSED, EXIT_QUICKDEV_ERROR),
    ],
)
def test_each_status_has_its_exit_code(status: str, script_code: int, expected: int) -> None:
    assert exit_status(status, script_code) == expected


def test_the_headline_says_the_deciding_problem_first_and_the_scripts_outcome() -> None:
    result = _result("passed", OURS)
    result.optimizer_steps = 2
    decide(result)
    assert headline(result) == [
        "Quickdev's own error, not your code's: the profiler failed",
        "your script ran to its end (2 training steps)",
    ]
    assert headline(_result("passed")) == []
