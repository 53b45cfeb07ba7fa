"""Profiling as job observers: ``--profile`` (torch.profiler) and ``--py-profile`` (cProfile).

The job adds what ``profiling_observers`` returns to its observer list. torch is
imported only when a job asks for a torch trace; the language server never imports
this package.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from quickdev import problems
from quickdev.events import BaseObserver, JobObserver
from quickdev.options import ProfileOptions
from quickdev.profiling.data_wait import DataWaitObserver
from quickdev.profiling.py_profile import PythonProfile
from quickdev.rundir.jsonio import write_json
from quickdev.rundir.layout import SOURCE_ROOTS_FILE
from quickdev.rundir.result import JobResult, Problem, ProfileSummary
from quickdev.rundir.verdict import QUICKDEV_ERROR

if TYPE_CHECKING:
    from quickdev.profiling.torch_profile import TorchProfileObserver

log = logging.getLogger(__name__)


def profiling_observers(options: ProfileOptions | None, run_dir: Path) -> list[JobObserver]:
    """The observers a job with these profile options needs, in the order they must run."""
    if options is None:
        return []
    torch_profile: TorchProfileObserver | None = None
    data_wait: DataWaitObserver | None = None
    observers: list[JobObserver] = []
    if options.torch_trace:
        from quickdev.profiling.torch_profile import TorchProfileObserver

        torch_profile = TorchProfileObserver(options, run_dir)
        # Before the profiler: it must see each step before the profiler spends time on it.
        data_wait = DataWaitObserver(overhead_s=lambda: torch_profile.step_overhead_s)
        observers += [data_wait, torch_profile]
    py_profile = PythonProfile(run_dir) if options.py_profile or not options.torch_trace else None
    observers.append(ProfileSummaryWriter(run_dir, torch_profile, data_wait, py_profile))
    return observers


def write_source_roots(run_dir: Path) -> None:
    """Stack frames in traces name files relative to the job's sys.path
    ("train.py(12): step", "torch/nn/modules/linear.py(130): forward"); the editor
    opens one by trying these roots in order."""
    roots = [os.path.abspath(p or os.curdir) for p in sys.path]
    roots = [r for r in dict.fromkeys(roots) if os.path.isdir(r)]
    write_json(run_dir / SOURCE_ROOTS_FILE, {"roots": roots})


class ProfileSummaryWriter(BaseObserver, feature="the profile summary"):
    """Starts the profilers before the script and puts their summary into the result."""

    def __init__(
        self,
        run_dir: Path,
        torch_profile: TorchProfileObserver | None,
        data_wait: DataWaitObserver | None,
        py_profile: PythonProfile | None,
    ) -> None:
        self.run_dir = run_dir
        self.torch_profile = torch_profile
        self.data_wait = data_wait
        self.py_profile = py_profile

    def on_setup(self) -> None:
        # Here rather than on the job-start event, so whatever runs between now and the
        # first training step is covered too.
        if self.torch_profile is not None:
            self.torch_profile.start()
        if self.py_profile is not None:
            self.py_profile.start()

    def on_result(self, result: JobResult) -> None:
        summary = ProfileSummary()
        if self.py_profile is not None:
            summary.py_profile = self.py_profile.stop().name
        if self.torch_profile is not None:
            feature = self.torch_profile.feature
            try:
                self.torch_profile.stop()
            except Exception as exc:
                log.exception("stopping the torch profiler failed")
                problems.own_error(feature, exc)
            # Names relative to the run directory, so a moved run directory still reads.
            summary.trace_files = [p.name for p in self.torch_profile.trace_files]
            summary.top_ops = self.torch_profile.ops.top()
            if not summary.trace_files:
                # Asked for and not there: never a clean pass (a failure above says why
                # first; the verdict keeps one line per feature).
                problems.report(
                    Problem(
                        kind=QUICKDEV_ERROR, feature=feature, message=f"{feature} wrote no trace"
                    )
                )
        if self.data_wait is not None:
            summary.data_wait_share = round(self.data_wait.share(), 4)
            summary.advice = self.data_wait.advice()
        if self.torch_profile is not None:
            try:
                write_source_roots(self.run_dir)
            except OSError:
                log.exception("writing %s failed", SOURCE_ROOTS_FILE)
        result.profile = summary
