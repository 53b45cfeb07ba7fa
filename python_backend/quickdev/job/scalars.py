"""TensorBoard scalars (loss, step time, data wait) as an event file in the run directory.

Events are buffered and written when the job ends, or every few seconds once a job
runs long enough for someone to watch it live.
"""

from __future__ import annotations

import time
from pathlib import Path

from quickdev.events import BaseObserver
from quickdev.tensorboard.event_file import ScalarEventFile

_FLUSH_AFTER_S = 5.0
EVENT_FILE_SUFFIX = ".runner"


class ScalarWriter(BaseObserver, feature="the TensorBoard scalars"):
    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._pending: list[tuple[str, float, int, float]] = []
        self._file: ScalarEventFile | None = None
        self._flushed_at = time.monotonic()
        self._batches = 0

    def on_batch(self, origin: str, wait_s: float) -> None:
        self._batches += 1
        self._add("data_wait_s", wait_s, self._batches)

    def on_train_step(self, step: int, step_time_s: float) -> None:
        self._add("step_time_s", step_time_s, step)

    def on_loss(self, step: int, value: float) -> None:
        self._add("loss", value, step)

    def on_job_end(self) -> None:
        self.flush()
        if self._file is not None:
            self._file.close()

    def _add(self, tag: str, value: float, step: int) -> None:
        self._pending.append((tag, value, step, time.time()))
        if time.monotonic() - self._flushed_at > _FLUSH_AFTER_S:
            self.flush()

    def flush(self) -> None:
        self._flushed_at = time.monotonic()
        if not self._pending:
            return
        if self._file is None:
            self._file = ScalarEventFile(self.run_dir, EVENT_FILE_SUFFIX)
        for tag, value, step, walltime in self._pending:
            self._file.add_scalar(f"quickdev/{tag}", value, step, walltime)
        self._pending.clear()
        self._file.flush()
