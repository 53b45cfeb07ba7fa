"""Shared helpers for the debugger tests: the DAP client lives one level up (tests/dap.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[2]


def line_of(path: Path, marker: str) -> int:
    """1-based number of the line holding ``marker``, so tests survive edits to the file."""
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if marker in text:
            return number
    raise AssertionError(f"{marker!r} not in {path}")


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts; whatever is still running at the end is killed."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def quickdev_env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}
