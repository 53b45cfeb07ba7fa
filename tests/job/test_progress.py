"""progress.json follows the job's counts: the last batch before a long pause is written
within the write interval, not at the next batch."""

from __future__ import annotations

import time
from pathlib import Path

from quickdev.job.progress import ProgressWriter
from quickdev.rundir.jsonio import read_json_object
from quickdev.rundir.layout import PROGRESS_FILE


def test_a_count_inside_the_write_interval_is_written_at_its_end(tmp_path: Path) -> None:
    writer = ProgressWriter(tmp_path)
    writer.on_job_start()
    for _ in range(3):  # three batches in quick succession, then a long step
        writer.on_batch("train.py:10", 0.0)
    writer.on_train_step(1, 0.0)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        data = read_json_object(tmp_path / PROGRESS_FILE)
        if data == {"stage": "running", "batches": 3, "steps": 1}:
            break
        time.sleep(0.02)
    assert read_json_object(tmp_path / PROGRESS_FILE) == {
        "stage": "running",
        "batches": 3,
        "steps": 1,
    }
