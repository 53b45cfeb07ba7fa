"""The resource sampler's figures: read from /proc, they are the ones psutil reports."""

from __future__ import annotations

import psutil
import pytest
from quickdev.profiling.sampler import _reader


def test_proc_figures_are_psutils() -> None:
    read = _reader()
    ballast = bytearray(64 * 2**20)  # RSS moves between readings: both must see it
    ballast[::4096] = b"x" * len(ballast[::4096])
    sample = read()
    proc = psutil.Process()
    assert sample["system/rss_mb"] == pytest.approx(proc.memory_info().rss / 2**20, rel=0.02)
    assert sample["system/rss_mb"] > 64
    assert sample["system/memory_percent"] == pytest.approx(
        psutil.virtual_memory().percent, abs=1.0
    )
    # The figures psutil gave, no fewer.
    assert set(sample) == {"system/cpu_percent", "system/rss_mb", "system/memory_percent"}
    del ballast
