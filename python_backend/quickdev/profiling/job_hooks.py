"""Where a quick-dev job switches on profiling and resource sampling.

The runner calls ``attach_to_job`` for every job before the script runs and calls
the returned finaliser with the result just before writing it. torch is imported
only when a job asks for a torch profile; this module is never imported by the
language server.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

from quickdev.profiling.data_wait import DataWaitObserver
from quickdev.profiling.py_profile import PythonProfile
from quickdev.profiling.sampler import ResourceSampler
from quickdev.runner.events import EventHub
from quickdev.runner.options import RunOptions
from quickdev.runner.result import JobResult, ProfileSummary

log = logging.getLogger(__name__)

Finaliser = Callable[[JobResult], None]

# Stack frames in traces name files relative to the job's sys.path ("train.py(12): step",
# "torch/nn/modules/linear.py(130): forward"); to open one, try these roots in order.
SOURCE_ROOTS_FILE = "source_roots.json"


def write_source_roots(run_dir: Path) -> None:
    roots = [os.path.abspath(p or os.curdir) for p in sys.path]
    roots = [r for r in dict.fromkeys(roots) if os.path.isdir(r)]
    (run_dir / SOURCE_ROOTS_FILE).write_text(json.dumps({"roots": roots}), encoding="utf-8")


def attach_to_job(options: RunOptions, run_dir: Path, hub: EventHub) -> Finaliser:
    run_dir.mkdir(parents=True, exist_ok=True)
    sampler: ResourceSampler | None = None
    if options.sample_interval_s:
        sampler = ResourceSampler(run_dir, options.sample_interval_s)
        sampler.start()

    if options.profile is None:

        def finish_plain(result: JobResult) -> None:
            if sampler is not None:
                sampler.stop()

        return finish_plain

    if not options.profile.torch_trace:
        py_only = PythonProfile(run_dir)
        py_only.start()

        def finish_py_only(result: JobResult) -> None:
            result.profile = ProfileSummary(py_profile=py_only.stop().name)
            if sampler is not None:
                sampler.stop()

        return finish_py_only

    from quickdev.profiling.torch_profile import TorchProfileObserver

    torch_profile = TorchProfileObserver(options.profile, run_dir)
    # Added first: it must see each step before the profiler spends time on it.
    data_wait = DataWaitObserver(overhead_s=lambda: torch_profile.step_overhead_s)
    hub.add(data_wait)
    hub.add(torch_profile)
    py_profile = PythonProfile(run_dir) if options.profile.py_profile else None
    # Started here rather than on the job-start event, so whatever runs between
    # now and the first training step is covered too.
    torch_profile.start()
    if py_profile is not None:
        py_profile.start()

    def finish(result: JobResult) -> None:
        summary = ProfileSummary()
        try:
            torch_profile.stop()
        except Exception:
            log.exception("stopping the torch profiler failed")
        if py_profile is not None:
            summary.py_profile = py_profile.stop().name
        if sampler is not None:
            sampler.stop()
        # Names relative to the run directory, so a moved run directory still reads.
        summary.trace_files = [p.name for p in torch_profile.trace_files]
        summary.top_ops = torch_profile.ops.top()
        summary.data_wait_share = round(data_wait.share(), 4)
        summary.advice = data_wait.advice()
        try:
            write_source_roots(run_dir)
        except OSError:
            log.exception("writing %s failed", SOURCE_ROOTS_FILE)
        result.profile = summary

    return finish
