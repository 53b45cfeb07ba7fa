"""Helpers the debugger tests share (a plain module: several conftest.py files exist)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def line_of(path: Path, marker: str) -> int:
    """1-based number of the line holding ``marker``, so tests survive edits to the file."""
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if marker in text:
            return number
    raise AssertionError(f"{marker!r} not in {path}")


def quickdev_env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}
