"""Helpers the debugger and attach tests share (a plain module: several conftest.py files exist)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def line_of(path: Path, marker: str) -> int:
    """1-based number of the line holding ``marker``, so tests survive edits to the file."""
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if marker in text:
            return number
    raise AssertionError(f"{marker!r} not in {path}")


def quickdev_env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


# A job that runs until its stop file appears: long enough to attach to, twice.
LONG_JOB = textwrap.dedent(
    """
    import sys
    import time
    from pathlib import Path

    import torch

    stop = Path(sys.argv[1])
    weights = torch.zeros(4)
    step = 0
    while not stop.exists():
        step += 1
        weights += 1.0  # BREAK
        time.sleep(0.01)
    """
)
