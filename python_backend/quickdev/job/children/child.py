"""In a process the script started: its work, counted and bounded as a job of its own.

``ChildJob`` wraps the process's ``run``: the recorder counts afresh from here (a fork
child inherits the parent's counts), the job's deadline holds here too (an alarm for
the time left: timers do not survive a fork), and when the process ends, however it
ends, ``RUN_DIR/children/<pid>/result.json`` says what it did, for the job to merge.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from quickdev.events import EventHub
from quickdev.job import output_tee
from quickdev.job.failure import describe
from quickdev.job.recorded import copy_recorded, settle_verdict
from quickdev.limits import stop_delivery
from quickdev.limits.budget import NONFINITE, TIMEOUT, Budget, StopJob
from quickdev.limits.nonfinite.found import NonFiniteFound
from quickdev.limits.recorder import Recorder
from quickdev.options import RunOptions
from quickdev.processes import peak_rss_mb
from quickdev.rundir.ids import iso_utc
from quickdev.rundir.jsonio import write_json
from quickdev.rundir.layout import CHILD_FILE, CHILDREN_DIR
from quickdev.rundir.result import DeviceRemaps, JobResult


class ChildJob:
    def __init__(
        self,
        options: RunOptions,
        run_dir: Path,
        recorder: Recorder,
        budget: Budget,
        name: str,
        script: str,
    ) -> None:
        pid = os.getpid()
        self.pid = pid
        self.name = name
        self.recorder = recorder
        self.budget = budget
        self.dir = run_dir / CHILDREN_DIR / str(pid)
        self.result = JobResult(
            id=f"{CHILDREN_DIR}/{pid}",
            script=script,
            cwd=os.getcwd(),
            started=iso_utc(),
            limits=budget.result_limits(options),
            keep_outputs=options.keep_outputs,
            run_dir=str(self.dir),
        )
        self._started = time.perf_counter()
        self._written = False
        self._device_before: DeviceRemaps | None = None

    def begin(self) -> None:
        self.recorder.restart(EventHub())
        # A fork child's device engine counted the parent's remaps too: report its own.
        self._device_before = self.recorder.device() if self.recorder.device else None
        self.dir.mkdir(parents=True, exist_ok=True)
        # Before the first write: a pool may terminate a worker that is still starting.
        self._install_signals()
        write_json(self.dir / CHILD_FILE, {"pid": self.pid, "name": self.name})
        self.result.write(self.dir)

    def run(self, run: Callable[[], Any]) -> None:
        """The process's own ``run``, recorded. A budget ends the child's work as a
        pass (exit status 0); anything else goes on to multiprocessing as it would."""
        result = self.result
        try:
            stop_delivery.script_starting()
            run()
            result.status, result.stop_reason = "passed", "completed"
        except StopJob as stop:
            result.status, result.stop_reason = "stopped", stop.reason
        except NonFiniteFound as found:
            # As in the job: the hunt's answer is a failure at the line that made the value.
            result.status, result.stop_reason = "failed", NONFINITE
            result.error = found.error()
            raise
        except SystemExit as exc:
            if exc.code in (None, 0):
                result.status, result.stop_reason = "passed", "completed"
            else:
                result.status, result.stop_reason = "failed", "exit"
                result.error = describe(exc)
                result.error.message = f"the process called sys.exit({exc.code})"
            raise
        except KeyboardInterrupt:
            result.status, result.stop_reason = "killed", "signal SIGINT"
            raise
        except BaseException as exc:
            result.status, result.stop_reason = "failed", "error"
            result.error = describe(exc)
            raise
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            stop_delivery.disarm()

    def end(self) -> None:
        """Write what the process did; once."""
        if self._written:
            return
        self._written = True
        # A SIGTERM now (a pool terminating a worker that has just finished) must not
        # end the process before its result is written; it is ending anyway.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        result = self.result
        if result.status == "running":
            result.status, result.stop_reason = "killed", "ended"
        copy_recorded(result, self.recorder)
        settle_verdict(result, self.recorder, 0, main=False)
        # Loaders the parent made and this process never read are the parent's.
        result.loaders = [s for s in result.loaders if s.passes or s.batches]
        if result.device is not None:
            result.limits.device = result.device.actual
            if self._device_before is not None:
                result.device.remaps = _since(result.device.remaps, self._device_before.remaps)
                result.device.answered = _since(
                    result.device.answered, self._device_before.answered
                )
        result.duration_s = round(time.perf_counter() - self._started, 3)
        result.peak_rss_mb = peak_rss_mb()
        result.write(self.dir)
        # A fork child leaves by os._exit, which flushes nothing.
        output_tee.flush_log()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def _install_signals(self) -> None:
        """As in a plain child: SIGTERM ends it at once (after its result is written),
        Ctrl+C is a KeyboardInterrupt; the job's deadline raises the budget's stop."""
        signal.signal(signal.SIGTERM, self._terminated)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if self.budget.deadline is None:
            return

        def on_alarm(signum: int, frame: FrameType | None) -> None:
            stop_delivery.raise_where_safe(StopJob(TIMEOUT), frame)

        signal.signal(signal.SIGALRM, on_alarm)
        left = self.budget.deadline - time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))

    def _terminated(self, signum: int, frame: FrameType | None) -> None:
        if not self._written:
            self.result.status, self.result.stop_reason = "killed", "signal SIGTERM"
            self.end()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)


def _since(now: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {key: n - before.get(key, 0) for key, n in now.items() if n > before.get(key, 0)}
