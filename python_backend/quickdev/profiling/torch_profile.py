"""A torch.profiler session stepped by the job's training steps.

The profiler's step follows the job's ``on_train_step`` event (an optimizer
step, or a training-mode forward where there is no optimizer), so the user's
code needs no change. Traces are written in torch-tb-profiler's layout,
``<worker>.<ns>.pt.trace.json.gz`` directly in the run directory, and each file
appears atomically: TensorBoard's plugin loads a run once it sees a trace file,
so it must never see half of one.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerAction, ProfilerActivity, profile, schedule

from quickdev.events import BaseObserver
from quickdev.limits.profiler_marks import MARK_PREFIX, OWN_WORK
from quickdev.options import ProfileOptions
from quickdev.profiling.call_sites import RunningFrame, running_user_frames
from quickdev.profiling.own_frames import pack_without_own_frames
from quickdev.rundir.layout import TRACE_SUFFIX
from quickdev.torch_compat import is_python_function

log = logging.getLogger(__name__)


def worker_name() -> str:
    """The name torch's own trace handler uses, so several processes never clash."""
    return f"{socket.gethostname()}_{os.getpid()}"


class OpTotals:
    """Self time per operator, summed over every recorded cycle of the schedule."""

    def __init__(self) -> None:
        self.self_us: dict[str, float] = {}
        self.device_self_us: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def add(self, prof: profile) -> None:
        for event in prof.events():  # type: ignore[no-untyped-call]
            # Python frames (with_stack) and the profiler's own step ranges are not
            # operators; the sampler thread's waits would otherwise top the list. The
            # job's own work and marks are not the user's.
            if is_python_function(event) or event.name.startswith("ProfilerStep"):
                continue
            if _marked(event):
                continue
            name = event.name
            self.self_us[name] = self.self_us.get(name, 0.0) + float(event.self_cpu_time_total)
            device = float(getattr(event, "self_device_time_total", 0.0) or 0.0)
            self.device_self_us[name] = self.device_self_us.get(name, 0.0) + device
            self.calls[name] = self.calls.get(name, 0) + 1

    def top(self, n: int = 10) -> list[dict[str, Any]]:
        """The operators that cost most on their own (children excluded), most first."""
        by_cost = sorted(
            self.self_us,
            key=lambda k: self.self_us[k] + self.device_self_us[k],
            reverse=True,
        )
        return [
            {
                "name": name,
                "calls": self.calls[name],
                "self_cpu_ms": round(self.self_us[name] / 1000.0, 3),
                "self_device_ms": round(self.device_self_us[name] / 1000.0, 3),
            }
            for name in by_cost[:n]
        ]


def _marked(event: Any) -> bool:
    """A mark of the job's, or an operator inside its own work (limits/profiler_marks.py)."""
    if event.name.startswith(MARK_PREFIX):
        return True
    parent = event.cpu_parent
    while parent is not None:
        if parent.name == OWN_WORK:
            return True
        parent = parent.cpu_parent
    return False


class TorchProfileObserver(BaseObserver, feature="the profiler"):
    """Starts with the job, steps on each training step, stops (and flushes) at the end."""

    def __init__(self, options: ProfileOptions, run_dir: Path) -> None:
        self.options = options
        self.run_dir = run_dir
        self.trace_files: list[Path] = []
        self.ops = OpTotals()
        self._flush_now = False
        self._started = False
        self._stopped = False
        self.step_overhead_s = 0.0  # time inside the profiler's step(): trace export mostly
        self._running: set[RunningFrame] = set()
        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self._schedule = schedule(
            wait=options.wait,
            warmup=options.warmup,
            active=options.active,
            repeat=options.repeat,
        )
        self._prof = profile(
            activities=activities,
            schedule=self._step_action,
            on_trace_ready=self._save,
            record_shapes=options.record_shapes,
            with_stack=options.with_stack,
            profile_memory=options.profile_memory,
        )

    def _step_action(self, step: int) -> ProfilerAction:
        # At the end of a job that never reached its active steps, record one last
        # (short) step, so the run still has a trace to open instead of nothing.
        if self._flush_now:
            return ProfilerAction.RECORD_AND_SAVE
        action: ProfilerAction = self._schedule(step)
        return action

    def _save(self, prof: profile) -> None:
        self.ops.add(prof)
        final = self.run_dir / f"{worker_name()}.{time.time_ns()}{TRACE_SUFFIX}"
        plain = final.with_name(final.name.removesuffix(".gz") + ".partial")
        packed = final.with_name(final.name + ".partial")
        prof.export_chrome_trace(str(plain))
        # Also without stacks: the job's own work and marks go (own_frames.py).
        pack_without_own_frames(plain, packed, self._running)
        plain.unlink()
        os.replace(packed, final)
        self.trace_files.append(final)

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._note_running()
            self._prof.start()

    def _note_running(self) -> None:
        """The user frames running now: if recording starts here, torch names them for
        the line they are at (profiling/call_sites.py renames them)."""
        self._running |= running_user_frames(sys._getframe(2))

    def on_job_start(self) -> None:
        self.start()

    def on_batch(self, origin: str, wait_s: float) -> None:
        self.start()

    def on_train_step(self, step: int, step_time_s: float) -> None:
        self.start()
        if not self._stopped:
            began = time.perf_counter()
            self._note_running()
            self._prof.step()
            self.step_overhead_s += time.perf_counter() - began

    def on_job_end(self) -> None:
        self.stop()

    def stop(self) -> None:
        """Idempotent: the job's end and the finaliser may both get here."""
        if not self._started or self._stopped:
            return
        self._stopped = True
        if not self.trace_files and self._prof.current_action in (
            ProfilerAction.NONE,
            ProfilerAction.WARMUP,
        ):
            self._flush_now = True
            self._prof.step()
        self._prof.stop()
