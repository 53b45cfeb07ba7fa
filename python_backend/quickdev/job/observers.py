"""The job's observers, registered from one list: progress, scalars, resources, profiling."""

from __future__ import annotations

from pathlib import Path

from quickdev.events import JobObserver
from quickdev.job.progress import ProgressWriter
from quickdev.job.scalars import ScalarWriter
from quickdev.options import RunOptions
from quickdev.profiling.observers import profiling_observers
from quickdev.profiling.sampler import ResourceSampler


def job_observers(
    options: RunOptions, run_dir: Path, progress: ProgressWriter
) -> list[JobObserver]:
    observers: list[JobObserver] = [progress, ScalarWriter(run_dir)]
    if options.sample_interval_s:
        observers.append(ResourceSampler(run_dir, options.sample_interval_s))
    return observers + profiling_observers(options.profile, run_dir)
