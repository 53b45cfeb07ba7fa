"""What result.json reports of the limits and of what the recorder counted: one place
for the job and for the processes the script starts (``quickdev.job.children``)."""

from __future__ import annotations

from quickdev.limits.recorder import Recorder
from quickdev.options import RunOptions, resolve_budgets
from quickdev.rundir.option_table import TRAIN_PASSES
from quickdev.rundir.result import JobResult, Limits


def initial_limits(options: RunOptions) -> Limits:
    """The limits result.json reports, before the job knows its device."""
    return Limits(
        values=dict(resolve_budgets(options).values),
        device=options.device,
        find_nonfinite=options.find_nonfinite,
    )


def copy_recorded(result: JobResult, recorder: Recorder | None) -> None:
    if recorder is not None:
        result.loaders = recorder.loaders
        result.optimizer_steps = recorder.steps
        result.loop_batches = recorder.loop_steps
        result.limits.values[TRAIN_PASSES] = recorder.budget.train_passes
        result.losses = recorder.losses
        result.outputs = recorder.outputs
        result.file_safety = recorder.file_safety
        result.limits.one_epoch_options = recorder.one_epoch_options
        result.limits.settings_changed = recorder.settings_changed
        result.device = recorder.device() if recorder.device else None
        result.loops_ended = recorder.loops.ended
        result.phases = recorder.phases()
        result.first_nonfinite = recorder.first_nonfinite
