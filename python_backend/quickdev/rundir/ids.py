"""Run ids, run directory creation and the timestamps written into results."""

from __future__ import annotations

import re
import secrets
import time
from datetime import datetime, timezone
from pathlib import Path

from quickdev.rundir.layout import DEFAULT_RUNS_DIR, GITIGNORE

PRIVATE_DIR_MODE = 0o700
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def new_run_id(stem: str, now: float | None = None) -> str:
    """e.g. ``20261121-221500-train-3f2a``: sorts by time, says what ran, never collides."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    label = _UNSAFE.sub("-", stem).strip("-.") or "job"
    return f"{stamp}-{label[:40]}-{secrets.token_hex(2)}"


_RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def is_run_id(text: object) -> bool:
    """Whether ``text`` can name a run: one path component inside a runs root, never an
    absolute path, ``..`` or a hidden name (ids come from files and clients)."""
    return isinstance(text, str) and len(text) <= 255 and _RUN_ID.fullmatch(text) is not None


def create_run_dir(runs_dir: Path, run_id: str, *, exist_ok: bool = True) -> Path:
    """``runs_dir/run_id``, both private to the user (0700) when created here.

    A run directory holds the script's arguments and output and the port of a debugpy
    that accepts any local client: other users of a shared machine must not read it.
    """
    runs_root = runs_dir.resolve()
    runs_root.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    _ignore_in_git(runs_root)
    run_dir = runs_root / run_id
    run_dir.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=exist_ok)
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
