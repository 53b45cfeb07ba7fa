"""CPU, memory and (where CUDA is present) GPU figures, sampled while the job runs.

Written as TensorBoard scalars into the run directory (by hand, see event_file.py:
importing TensorBoard's writer would cost the job half a second), so the run's
Scalars tab shows utilisation beside the profiler's trace. Where there is ``/proc``
(Linux) the figures are read from it: importing psutil would cost each job ~10 ms for
the same numbers. Elsewhere psutil is used when the job's interpreter has it; without
it, CPU time comes from ``os.times()`` alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from quickdev.events import BaseObserver
from quickdev.rundir.result import JobResult
from quickdev.tensorboard.event_file import ScalarEventFile
from quickdev.threads import own_thread

log = logging.getLogger(__name__)

SCALARS_SUFFIX = ".quickdev"  # TensorBoard reads every events file; ours are easy to spot


def _rss_mb_from_proc() -> float | None:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _memory_percent_from_proc() -> float | None:
    """The machine's memory in use, as psutil's ``virtual_memory().percent`` computes it:
    (MemTotal - MemAvailable) / MemTotal."""
    try:
        fields = {}
        for line in Path("/proc/meminfo").read_text().splitlines():
            name, _, value = line.partition(":")
            fields[name] = int(value.split()[0])
        total, available = fields["MemTotal"], fields["MemAvailable"]
    except (OSError, IndexError, KeyError, ValueError):
        return None
    return 100.0 * (total - available) / total if total > 0 else None


class _CpuClock:
    """Process CPU time over wall time since the last reading, in percent of one core."""

    def __init__(self) -> None:
        self._cpu = self._cpu_now()
        self._wall = time.perf_counter()

    @staticmethod
    def _cpu_now() -> float:
        t = os.times()
        return t.user + t.system

    def percent(self) -> float:
        cpu, wall = self._cpu_now(), time.perf_counter()
        used, elapsed = cpu - self._cpu, wall - self._wall
        self._cpu, self._wall = cpu, wall
        return 100.0 * used / elapsed if elapsed > 0 else 0.0


def _reader() -> Callable[[], dict[str, float]]:
    """The function that takes one sample; chosen once, by what the system offers."""
    if _rss_mb_from_proc() is None:
        try:
            import psutil
        except ImportError:
            pass
        else:
            return _psutil_reader(psutil)
    clock = _CpuClock()

    def plain() -> dict[str, float]:
        values = {"system/cpu_percent": clock.percent()}
        rss = _rss_mb_from_proc()
        if rss is not None:
            values["system/rss_mb"] = rss
        memory = _memory_percent_from_proc()
        if memory is not None:
            values["system/memory_percent"] = memory
        return values

    return plain


def _psutil_reader(psutil: Any) -> Callable[[], dict[str, float]]:
    proc = psutil.Process()
    proc.cpu_percent(None)  # the first call only sets the baseline

    def with_psutil() -> dict[str, float]:
        return {
            "system/cpu_percent": float(proc.cpu_percent(None)),
            "system/rss_mb": proc.memory_info().rss / 2**20,
            "system/memory_percent": float(psutil.virtual_memory().percent),
        }

    return with_psutil


def _gpu_reader() -> Callable[[], dict[str, float]] | None:
    import torch

    from quickdev.limits.device.engine import cuda_started

    if not torch.cuda.is_available():
        return None

    def gpu() -> dict[str, float]:
        # Only once the job itself has started CUDA: asking first (utilization() picks the
        # current device) would create a CUDA context in a CPU-only job, a second or two
        # and hundreds of MB of GPU memory the script never asked for.
        if not cuda_started():
            return {}
        values = {
            "gpu/memory_allocated_mb": torch.cuda.memory_allocated() / 2**20,
            "gpu/memory_reserved_mb": torch.cuda.memory_reserved() / 2**20,
        }
        # Utilisation needs NVML (pynvml), which not every install has.
        with contextlib.suppress(Exception):
            values["gpu/utilization_percent"] = float(torch.cuda.utilization())
        return values

    return gpu


class ResourceSampler(BaseObserver, feature="the resource sampler"):
    """A daemon thread: samples every ``interval_s`` until stopped, then flushes.

    As a job observer it starts before the script runs and stops once it ended.
    """

    def __init__(self, run_dir: Path, interval_s: float) -> None:
        self.run_dir = run_dir
        self.interval_s = interval_s
        self.samples = 0
        self._stop = threading.Event()
        self._thread = own_thread(self._run, "quickdev-sampler")
        self._writer: ScalarEventFile | None = None

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        readers = [_reader()]
        gpu = _gpu_reader()
        if gpu is not None:
            readers.append(gpu)
        try:
            self._writer = ScalarEventFile(self.run_dir, SCALARS_SUFFIX)
        except OSError:
            log.exception("resource sampling is off: cannot write to %s", self.run_dir)
            return
        self._sample(readers)  # the job's start
        # Sample on every tick and once more at the end, so even a job shorter than
        # one interval leaves figures to look at.
        while not self._stop.wait(self.interval_s):
            self._sample(readers)
        self._sample(readers)
        self._writer.close()

    @staticmethod
    def _read(readers: list[Callable[[], dict[str, float]]]) -> dict[str, float]:
        try:
            return {k: v for read in readers for k, v in read().items()}
        except Exception:
            log.exception("resource sample failed")
            return {}

    def _sample(self, readers: list[Callable[[], dict[str, float]]]) -> None:
        now, values = time.time(), self._read(readers)
        if values:
            self._write(values, now)

    def _write(self, values: dict[str, float], walltime: float) -> None:
        assert self._writer is not None
        try:
            for tag, value in values.items():
                self._writer.add_scalar(tag, value, self.samples, walltime)
            self._writer.flush()  # a reader (TensorBoard) sees figures while the job runs
        except Exception:
            log.exception("writing resource scalars failed")
        self.samples += 1

    def on_setup(self) -> None:
        self.start()

    def on_result(self, result: JobResult) -> None:
        self.stop()

    def stop(self) -> None:
        """Takes a last sample and closes the events file."""
        if not self._thread.is_alive():
            return
        self._stop.set()
        self._thread.join(timeout=5)
