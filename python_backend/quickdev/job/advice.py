"""One line of advice when a budget ended a loop or the job: the knob that would have helped.

A budget ends a loop from outside; the script usually has a knob that would have
made the same loop short from inside (nanoGPT's ``eval_iters``, a ``--max-iters``
option). Static analysis finds it without running anything. Which knob depends on what
ran out: a timeout before the second training step means one step is the cost (the
batch size); the NaN hunt running out means its own horizon (quickdev's ``--timeout``,
``--max-steps``). A knob the job already set (an option in the script's arguments, an
epochs option the job set to 1) is never the advice: it was set, and did not help.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from quickdev.job.target import ScriptTarget, Target
from quickdev.options import RunOptions, limit_value
from quickdev.rundir import option_table
from quickdev.rundir.option_table import BATCHES, LOOP_STEPS, MAX_STEPS, TIMEOUT
from quickdev.rundir.result import JobResult

if TYPE_CHECKING:
    from quickdev.analysis import Knob
    from quickdev.analysis.findings import KnobKind


# After training, the clock runs out in an evaluation or a sampling loop: a training knob
# (--steps, --epochs) would change nothing there.
_AFTER_TRAINING: tuple[KnobKind, ...] = ("eval_iters",)

# The budgets that end the NaN hunt's training: its horizon in steps (a loop of hand-made
# batches gets the same number), or the wall clock.
_HUNT_ENDS = (MAX_STEPS, LOOP_STEPS, TIMEOUT)


def advice_for(
    reason: str,
    target: Target,
    options: RunOptions,
    result: JobResult,
    after_training: bool = False,
) -> str | None:
    """The knob for the loop ``reason`` ended or stopped: the script's own knob of the kinds
    the option table names for that budget (which kind of knob shortens the loop it ended
    or stopped), as one line; ``after_training``: the script had trained and was evaluating
    or sampling when it was stopped."""
    if options.find_nonfinite and reason in _HUNT_ENDS:
        hunt = _hunt_advice(reason, options, result)
        if hunt is not None:
            return hunt
    limit = option_table.BY_NAME.get(reason)
    kinds: tuple[str, ...] = limit.knobs if limit is not None else ()
    if reason == TIMEOUT and after_training:
        kinds = _AFTER_TRAINING
    elif reason == TIMEOUT and result.optimizer_steps <= 1:
        kinds = ("batch_size",)  # the time went into one step: its size is the cost
    if not kinds or not isinstance(target, ScriptTarget):
        return None
    # Imported only here: a job that passes, fails or ends at a budget with no knob
    # would pay ~10 ms for an import it never uses.
    from quickdev.analysis import analyze_file

    analysis = analyze_file(target.path)
    if analysis is None:
        return None
    already = _set_by_job(target.argv()[1:], result.limits.one_epoch_options)
    for kind in kinds:
        knob = next(
            (
                k
                for k in analysis.knobs
                if k.kind == kind and not k.is_switch and k.flag not in already
            ),
            None,
        )
        if knob is None:
            continue
        if kind == "batch_size":
            return _batch_size_advice(knob, target.path.name, result)
        batches = int(limit_value(options, BATCHES))
        return _advice(knob, target.path.name, _small_value(kind, batches))
    return None


def _set_by_job(script_args: list[str], one_epoch_options: list[str]) -> set[str]:
    """The options this job's script was given (``--epochs 1``, ``--epochs=1``) and those
    the job set itself."""
    given = {arg.partition("=")[0] for arg in script_args if arg.startswith("-")}
    return given | set(one_epoch_options)


def _small_value(kind: str, batches: int) -> int:
    return 1 if kind == "epochs" else batches


def _advice(knob: Knob, file: str, value: int) -> str:
    where = f"{file}:{knob.line + 1}"
    default = "" if knob.default is None else f" (default {knob.default})"
    if knob.is_global:
        return (
            f"{knob.flag}{default} at {where} sets this loop's length; "
            f"a value such as {value} would have ended it sooner"
        )
    return (
        f"{knob.flag}{default} at {where} would have ended it sooner: pass -- {knob.flag} {value}"
    )


def _batch_size_advice(knob: Knob, file: str, result: JobResult) -> str:
    where = f"{file}:{knob.line + 1}"
    default = "" if knob.default is None else f" (default {knob.default})"
    smaller = max(1, knob.default // 8) if knob.default else 8
    steps = "its first training step" if result.optimizer_steps == 0 else "one training step"
    return (
        f"{steps} took most of the time: {knob.flag}{default} at {where} sets what a step "
        f"costs; pass -- {knob.flag} {smaller} for a verdict in seconds"
    )


def _hunt_advice(reason: str, options: RunOptions, result: JobResult) -> str | None:
    """The NaN hunt ran out before it found anything: its horizon is the knob."""
    # The budget's own values (result.json's limits): the hunt's horizon as the job ran it.
    horizon = result.limits.values.get(MAX_STEPS)
    steps = result.optimizer_steps
    if reason in (MAX_STEPS, LOOP_STEPS) and horizon:
        return (
            f"the NaN hunt found no NaN/Inf in its {horizon} training steps: "
            f"quickdev run --find-nonfinite --max-steps {horizon * 4} hunts further"
        )
    timeout = result.limits.values.get(TIMEOUT)
    if reason == TIMEOUT and timeout and steps > 1 and horizon:
        needed = math.ceil(timeout * horizon / steps / 60) * 60
        return (
            f"the NaN hunt trained {steps} of its {horizon} steps before the {timeout:.0f} s "
            f"timeout and found no NaN/Inf: quickdev run --find-nonfinite --timeout {needed} "
            f"lets it hunt all {horizon}"
        )
    return None
