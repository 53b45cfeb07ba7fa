"""Choosing and creating a job's run directory."""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path


def new_run_id(stem: str, now: float | None = None) -> str:
    """e.g. ``20261121-221500-train-3f2a``: sorts by time, says what ran, never collides."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    label = re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-.") or "job"
    return f"{stamp}-{label[:40]}-{secrets.token_hex(2)}"


def create_run_dir(runs_dir: Path, run_id: str) -> Path:
    run_dir = runs_dir.resolve() / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir
