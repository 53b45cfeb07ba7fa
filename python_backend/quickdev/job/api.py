"""In-process API for notebooks and tests: ``quickdev.run(...)`` in the current interpreter.

The limits are installed for the length of the call and removed afterwards, so the
interpreter is left as it was found (``sys.argv``, ``sys.path``, torch's functions).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from quickdev.job.job import run_job
from quickdev.job.target import CallableTarget, ScriptTarget, Target
from quickdev.options import Device, RunOptions
from quickdev.rundir.layout import DEFAULT_RUNS_DIR
from quickdev.rundir.option_table import BATCHES, DEFAULT_BATCHES, MAX_STEPS, TIMEOUT
from quickdev.rundir.result import JobResult

_one_job_at_a_time = threading.Lock()


def run(
    script_or_callable: str | os.PathLike[str] | Callable[[], Any],
    batches: int = DEFAULT_BATCHES,
    *,
    args: Sequence[str] = (),
    max_steps: int | None = None,
    timeout_s: float | None = None,
    device: Device = "auto",
    runs_dir: str | os.PathLike[str] = DEFAULT_RUNS_DIR,
    name: str | None = None,
    no_limits: bool = False,
    memory_forecast: str | None = None,
) -> JobResult:
    """Run a script (as ``__main__``, with ``args``) or a no-argument callable under the
    quick-dev limits and return its result; the run directory is ``result.run_dir``.

    A usage problem (no such script) raises ValueError; a failure in the user's code
    does not raise, it is in ``result.status`` and ``result.error``. ``memory_forecast``:
    "auto" or the devices to compare with (as ``--memory-forecast``) forecasts the GPU
    memory of the first training step into ``result.memory_forecast``.
    """
    target: Target
    if callable(script_or_callable):
        target = CallableTarget(script_or_callable)
    else:
        target = ScriptTarget(os.fspath(script_or_callable), list(args))
    options = RunOptions(
        script=target.description,
        args=list(args),
        limits={
            name: value
            for name, value in ((BATCHES, batches), (MAX_STEPS, max_steps), (TIMEOUT, timeout_s))
            if value is not None
        },
        device=device,
        runs_dir=Path(runs_dir),
        name=name,
        no_limits=no_limits,
        sample_interval_s=None,
        memory_forecast=memory_forecast,
    )
    if not _one_job_at_a_time.acquire(blocking=False):
        raise RuntimeError("quickdev.run: another quick-dev job is running in this process")
    try:
        outcome = run_job(options, target, in_process=True)
    finally:
        _one_job_at_a_time.release()
    if outcome.usage_message:
        raise ValueError(outcome.usage_message)
    return outcome.result
