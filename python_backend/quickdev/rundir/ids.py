"""Run ids, run directory creation and the timestamps written into results."""

from __future__ import annotations

import re
import secrets
import time
from datetime import datetime, timezone
from pathlib import Path

from quickdev.rundir.layout import DEFAULT_RUNS_DIR, GITIGNORE

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def new_run_id(stem: str, now: float | None = None) -> str:
    """e.g. ``20261121-221500-train-3f2a``: sorts by time, says what ran, never collides."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    label = _UNSAFE.sub("-", stem).strip("-.") or "job"
    return f"{stamp}-{label[:40]}-{secrets.token_hex(2)}"


def create_run_dir(runs_dir: Path, run_id: str) -> Path:
    runs_root = runs_dir.resolve()
    fresh = not runs_root.exists()
    run_dir = runs_root / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    if fresh:
        _ignore_in_git(runs_root)
    return run_dir


def _ignore_in_git(runs_root: Path) -> None:
    """Run history is not source: a ``.gitignore`` of ``*`` in ``.quickdev/`` (or the root)."""
    folder = runs_root.parent if runs_root.parent.name == DEFAULT_RUNS_DIR.parts[0] else runs_root
    ignore = folder / GITIGNORE
    if not ignore.exists():
        ignore.write_text("# quickdev run history\n*\n", encoding="utf-8")


def iso_utc(timestamp: float | None = None) -> str:
    """The ``started`` field: UTC, ISO 8601, to the second."""
    moment = datetime.fromtimestamp(time.time() if timestamp is None else timestamp, timezone.utc)
    return moment.isoformat(timespec="seconds")
