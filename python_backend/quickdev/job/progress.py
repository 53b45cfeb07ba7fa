"""``progress.json`` while the job runs, for the language server's progress reports.

Batches and steps can come many times a second, so writes are at most one per
``_MIN_INTERVAL_S``; a count that arrives inside that interval is written at its end
(a one-shot timer), not at the next event, which may be a long step away.
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


class ProgressWriter(BaseObserver):
    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / PROGRESS_FILE
        self.stage = "starting"
        self.batches = 0
        self.steps = 0
        self._written_at = 0.0
        self._lock = threading.Lock()
        self._trailing: threading.Thread | None = None

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
        wait = _MIN_INTERVAL_S - (time.monotonic() - self._written_at)
        if wait <= 0:
            self.write()
        elif self._trailing is None:

            def write_later() -> None:
                time.sleep(wait)
                self._trailing = None
                self.write()

            self._trailing = own_thread(write_later, "quickdev-progress")
            self._trailing.start()

    def write(self) -> None:
        with self._lock:
            self._written_at = time.monotonic()
            data = {"stage": self.stage, "batches": self.batches, "steps": self.steps}
            try:
                write_json(self.path, data)
            except OSError:
                log.warning("cannot write %s", self.path, exc_info=True)
