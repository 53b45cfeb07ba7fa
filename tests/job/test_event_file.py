"""The hand-written event file reads back in TensorBoard's own reader."""

from __future__ import annotations

from pathlib import Path

import pytest
from quickdev.tensorboard.event_file import ScalarEventFile, crc32c
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def test_crc32c_check_value() -> None:
    # The standard CRC-32C check value of the ASCII digits 1-9.
    assert crc32c(b"123456789") == 0xE3069283


def test_scalars_read_back_in_tensorboard(tmp_path: Path) -> None:
    events = ScalarEventFile(tmp_path, ".test")
    points = [(0, 2.5), (1, -0.125), (300, 1e-7), (2**40, 12345.0)]
    for step, value in points:
        events.add_scalar("quickdev/loss", value, step, wall_time=1_700_000_000.0 + step)
    events.add_scalar("quickdev/step_time_s", 0.01, 1, wall_time=1_700_000_000.5)
    events.close()

    accumulator = EventAccumulator(str(tmp_path))
    accumulator.Reload()
    assert set(accumulator.Tags()["scalars"]) == {"quickdev/loss", "quickdev/step_time_s"}
    loss = accumulator.Scalars("quickdev/loss")
    assert [event.step for event in loss] == [step for step, _ in points]
    assert [event.value for event in loss] == pytest.approx([v for _, v in points], rel=1e-6)
    assert loss[1].wall_time == pytest.approx(1_700_000_001.0)
