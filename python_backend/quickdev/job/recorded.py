"""What result.json reports of what the recorder counted and the loops the budget ended:
one place for the job and for the processes the script starts (``quickdev.job.children``).
The limits themselves are the budget's values (``Budget.result_limits``)."""

from __future__ import annotations

from quickdev.limits.recorder import Recorder
from quickdev.rundir.result import JobResult


def copy_recorded(result: JobResult, recorder: Recorder | None) -> None:
    if recorder is not None:
        result.loaders = recorder.loaders
        result.optimizer_steps = recorder.steps
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
