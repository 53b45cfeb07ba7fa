"""``progress.json`` while the job runs, for the language server's progress reports.

Batches and steps can come many times a second, so writes are at most one per
``_MIN_INTERVAL_S``; counts are written by one thread of the job's own, at once or at the
end of that interval (not at the next event, which may be a long step away), never on the
user's thread (a debugger stepping into the user's call would stop in the writing). One
thread for the whole job: a thread per write would leave its exit in a profile's trace. It
ends with the job (``stop``): an in-process ``quickdev.run`` leaves no thread behind.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from quickdev.events import BaseObserver
from quickdev.rundir.jsonio import write_json
from quickdev.rundir.layout import PROGRESS_FILE
from quickdev.threads import own_thread

log = logging.getLogger(__name__)

_MIN_INTERVAL_S = 0.2


class ProgressWriter(BaseObserver, feature="the progress report"):
    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / PROGRESS_FILE
        self.stage = "starting"
        self.batches = 0
        self.steps = 0
        self._written_at = 0.0
        self._lock = threading.Lock()
        self._pending = threading.Event()
        self._stopped = threading.Event()
        self._writer: threading.Thread | None = None

    def on_job_start(self) -> None:
        self.set_stage("running")

    def on_batch(self, origin: str, wait_s: float) -> None:
        self.batches += 1
        self._maybe_write()

    def on_train_step(self, step: int, step_time_s: float) -> None:
        self.steps = step
        self._maybe_write()

    def set_stage(self, stage: str) -> None:
        self.stage = stage
        self.write()

    def _maybe_write(self) -> None:
        # Always the writer thread: the user's thread (inside their model(x), under a
        # debugger's Step Into) runs none of the file writing.
        if self._writer is None:
            self._writer = own_thread(self._write_later, "quickdev-progress")
            self._writer.start()
        self._pending.set()

    def _write_later(self) -> None:
        while not self._stopped.is_set():
            self._pending.wait()
            # The rest of the interval, cut short by the job's end.
            self._stopped.wait(max(0.0, _MIN_INTERVAL_S - (time.monotonic() - self._written_at)))
            self._pending.clear()
            self.write()

    def stop(self) -> None:
        """The job ended: the writer thread writes what is pending and ends."""
        self._stopped.set()
        self._pending.set()
        if self._writer is not None:
            self._writer.join()

    def write(self) -> None:
        with self._lock:
            self._written_at = time.monotonic()
            data = {"stage": self.stage, "batches": self.batches, "steps": self.steps}
            try:
                write_json(self.path, data)
            except OSError:
                log.warning("cannot write %s", self.path, exc_info=True)
