"""The verdict: one rule for what a job's status says, for every process that decides one.

``passed`` means the script ran its phases and trained. A script can run to its end
without that being true: its loss became NaN or Inf, it ended without a training step
although it had something to train, or Quickdev's own code failed in something the job
was asked for. Those are the result's ``problems``; the status says the first of these
that applies:

1. the script raised                      -> failed  (its exception is the error)
2. a training loss became NaN/Inf         -> failed  (error ``NonFiniteLoss``)
3. no training step, though an optimizer  -> failed  (error ``NoTrainingStep``)
   was built or a trainer began
4. an error of Quickdev's own             -> error   (the script's outcome said beside it)
5. a budget stopped the script            -> stopped
6. otherwise                              -> passed

The job, a process the script started, a distributed job's merge and the hard stop all
call ``decide``; the terminal, the result page and the editor read the same
``headline``. Standard library only: the language server reads results too.
"""

from __future__ import annotations

from collections.abc import Callable

from quickdev.rundir.result import ErrorInfo, JobResult, Problem

NONFINITE_LOSS = "nonfinite_loss"
NO_TRAINING = "no_training"
QUICKDEV_ERROR = "quickdev_error"
KINDS = (NONFINITE_LOSS, NO_TRAINING, QUICKDEV_ERROR)

# The error types a failure the verdict made carries (the script raised nothing).
NONFINITE_LOSS_ERROR = "NonFiniteLoss"
NO_TRAINING_ERROR = "NoTrainingStep"
_FAILURES = {NONFINITE_LOSS: NONFINITE_LOSS_ERROR, NO_TRAINING: NO_TRAINING_ERROR}
# stop_reason of a job the verdict failed or marked as Quickdev's error.
STOP_REASONS = {NONFINITE_LOSS: "nonfinite_loss", NO_TRAINING: "no_training"}
QUICKDEV_ERROR_REASON = "quickdev_error"


def first_problem(problems: list[Problem], kind: str) -> Problem | None:
    return next((p for p in problems if p.kind == kind), None)


def add_problem(problems: list[Problem], problem: Problem) -> None:
    """Keep ``problem`` unless one of its kind already says the same (every rank of a
    distributed job sees the same NaN loss; one line says it)."""
    for known in problems:
        if known.kind == problem.kind and (
            problem.kind != QUICKDEV_ERROR or known.feature == problem.feature
        ):
            return
    problems.append(problem)


def decide(result: JobResult) -> bool:
    """Settle ``result.status`` from the script's outcome (already in it) and its
    problems; True when the problems changed it. Idempotent."""
    if result.status not in ("passed", "stopped"):
        return False  # the script's own failure (or a kill) says it first
    for kind in (NONFINITE_LOSS, NO_TRAINING):
        problem = first_problem(result.problems, kind)
        if problem is None or (kind == NO_TRAINING and result.status == "stopped"):
            # A budget that stopped the script before its first step says why itself.
            continue
        result.status, result.stop_reason = "failed", STOP_REASONS[kind]
        result.error = ErrorInfo(
            type=_FAILURES[kind], message=problem.message, file=problem.file, line=problem.line
        )
        return True
    if first_problem(result.problems, QUICKDEV_ERROR) is not None:
        result.status = "error"
        result.stop_reason = result.stop_reason or QUICKDEV_ERROR_REASON
        return True
    return False


def made_by_problems(result: JobResult) -> bool:
    """Whether the status is the problems' doing: the script itself ran to its end (or
    to a budget) without raising."""
    if result.status == "error":
        return True
    return result.error is not None and result.error.type in _FAILURES.values()


def headline(result: JobResult, path: Callable[[str], str] = str) -> list[str]:
    """The lines that say first why a finished job is not a clean pass: each problem, the
    one that decided the status first. Empty for a clean pass or the script's own error
    (whose error line says it). ``path`` shortens a file's path for the reader."""
    if not result.problems:
        return []
    lines = []
    ordered = sorted(result.problems, key=lambda p: KINDS.index(p.kind) if p.kind in KINDS else 9)
    for problem in ordered:
        lines.append(_line(problem, path))
    if result.status == "error":
        lines.append(_script_outcome(result))
    return lines


def _line(problem: Problem, path: Callable[[str], str]) -> str:
    where = f" ({path(problem.file)}:{problem.line})" if problem.file and problem.line else ""
    if problem.kind == QUICKDEV_ERROR:
        detail = f" ({problem.detail})" if problem.detail else ""
        return f"Quickdev's own error, not your code's: {problem.message}{detail}"
    return f"{problem.message}{where}"


def _script_outcome(result: JobResult) -> str:
    """Beside an error of Quickdev's own: what the script itself did."""
    steps = f"{result.optimizer_steps} training step" + ("" if result.optimizer_steps == 1 else "s")
    if result.stop_reason and result.stop_reason not in ("completed", QUICKDEV_ERROR_REASON):
        return f"your script was stopped by a budget ({result.stop_reason}) after {steps}"
    return f"your script ran to its end ({steps})"
