"""Where a quick-dev job switches on profiling and resource sampling.

Interface only, for now: the runner calls ``attach_to_job`` before the script runs
and calls the returned finaliser with the result just before writing it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from quickdev.runner.events import EventHub
from quickdev.runner.options import RunOptions
from quickdev.runner.result import JobResult

Finaliser = Callable[[JobResult], None]


def attach_to_job(options: RunOptions, run_dir: Path, hub: EventHub) -> Finaliser:
    def finish(result: JobResult) -> None:
        pass

    return finish
