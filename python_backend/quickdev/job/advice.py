"""One line of advice when a budget ended a loop or the job: the script's own knob for it.

A budget ends a loop from outside; the script usually has a knob that would have
made the same loop short from inside (nanoGPT's ``eval_iters``, a ``--max-iters``
option). Static analysis finds it without running anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from quickdev.job.target import ScriptTarget, Target
from quickdev.rundir import option_table
from quickdev.rundir.option_table import TIMEOUT

if TYPE_CHECKING:
    from quickdev.analysis import Knob


# After training, the clock runs out in an evaluation or a sampling loop: a training knob
# (--steps, --epochs) would change nothing there.
_AFTER_TRAINING = ("eval_iters",)


def advice_for(
    reason: str, target: Target, batches: int, after_training: bool = False
) -> str | None:
    """The script's own knob of the kinds the option table names for the budget ``reason``
    (which kind of knob shortens the loop it ended or stopped), as one line;
    ``after_training``: the script had trained and was evaluating or sampling when it was
    stopped."""
    limit = option_table.BY_NAME.get(reason)
    kinds = limit.knobs if limit is not None else ()
    if reason == TIMEOUT and after_training:
        kinds = _AFTER_TRAINING
    if not kinds or not isinstance(target, ScriptTarget):
        return None
    # Imported only here: a job that passes, fails or ends at a budget with no knob
    # would pay ~10 ms for an import it never uses.
    from quickdev.analysis import analyze_file

    analysis = analyze_file(target.path)
    if analysis is None:
        return None
    for kind in kinds:
        knob = next((k for k in analysis.knobs if k.kind == kind and not k.is_switch), None)
        if knob is not None:
            return _advice(knob, target.path.name, _small_value(kind, batches))
    return None


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
