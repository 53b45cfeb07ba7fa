"""What result.json reports of what the recorder counted and the loops the budget ended:
one place for the job and for the processes the script starts (``quickdev.job.children``);
and the problems the verdict reads (rundir/verdict.py). The limits themselves are the
budget's values (``Budget.result_limits``)."""

from __future__ import annotations

from pathlib import Path

from quickdev import problems
from quickdev.analysis import analyze_file
from quickdev.analysis.findings import TRAINING_STEP_KINDS
from quickdev.limits.recorder import Recorder
from quickdev.processes import exit_status
from quickdev.rundir.result import ErrorInfo, JobResult, Problem
from quickdev.rundir.verdict import NO_TRAINING, add_problem, decide


def copy_recorded(result: JobResult, recorder: Recorder | None) -> None:
    if recorder is not None:
        result.loaders = recorder.loaders
        result.optimizer_steps = recorder.steps
        result.scaler_skipped_steps = recorder.scaler_skipped_steps
        result.loop_batches = recorder.loop_steps
        result.losses = recorder.losses
        result.outputs = recorder.outputs
        result.file_safety = recorder.file_safety
        result.limits.one_epoch_options = recorder.one_epoch_options
        result.limits.settings_changed = recorder.settings_changed
        result.device = recorder.device() if recorder.device else None
        result.loops_ended = recorder.budget.loops.ended
        result.phases = recorder.phases()
        result.first_nonfinite = recorder.first_nonfinite
        result.step_cost = recorder.step_costs


def settle_verdict(
    result: JobResult,
    recorder: Recorder | None,
    exit_code: int,
    *,
    main: bool,
    script: Path | None = None,
    exited_at: ErrorInfo | None = None,
) -> int:
    """Add the problems this process reported, and a missing training step, to
    ``result``; decide its status; return the exit code that goes with it.

    ``main``: the job's own process (a process the script started may well train
    nothing: its parent's result says whether the job trained); ``script``: the file
    whose training code counts, where there is one; ``exited_at``: where the script
    called ``sys.exit(0)``.
    """
    for problem in problems.take():
        add_problem(result.problems, problem)
    if main and result.status == "passed":
        untrained = _no_training(result, recorder, script, exited_at)
        if untrained is not None:
            add_problem(result.problems, untrained)
    decide(result)
    return exit_status(result.status, exit_code)


def _no_training(
    result: JobResult, recorder: Recorder | None, script: Path | None, exited_at: ErrorInfo | None
) -> Problem | None:
    """The script ended without a training step although it had something to train: it
    built an optimizer, or its own code holds a training loop or a trainer's fit."""
    if result.optimizer_steps or result.loop_batches or recorder is None:
        return None
    if result.scaler_skipped_steps:
        # Its GradScaler skipped every step so far (inf/NaN gradients at its first scales,
        # as a float16 run on a GPU begins): the step ran; its update was the scaler's call.
        return None
    built = recorder.optimizer_origin if recorder.optimizer_seen else None
    training_line = None if built or script is None else _training_line(script)
    if built is None and training_line is None:
        return None  # nothing to train: an evaluation or data script
    if exited_at is not None and exited_at.file:
        how = "the script called sys.exit(0) before its first training step"
        return Problem(kind=NO_TRAINING, message=how, file=exited_at.file, line=exited_at.line)
    if built is not None:
        file, _, line = built.rpartition(":")
        return Problem(
            kind=NO_TRAINING,
            message="the script built an optimizer and ended without a training step",
            file=file or None,
            line=int(line) if line.isdigit() else None,
        )
    return Problem(
        kind=NO_TRAINING,
        message="the script has a training step and ended without running it",
        file=str(script),
        line=training_line,
    )


def _training_line(script: Path) -> int | None:
    """The 1-based line of the script's first training step or trainer fit, if it has one."""
    analysis = analyze_file(script)
    if analysis is None:
        return None
    lines = [s.line for s in analysis.steps if s.kind in TRAINING_STEP_KINDS]
    lines += [e.line for e in analysis.entry_points if e.kind == "trainer_fit"]
    return min(lines) + 1 if lines else None
