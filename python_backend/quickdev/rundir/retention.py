"""Run history that does not grow forever: the last N runs and a size cap, pruned at job start.

A run that is still going (its result says ``running``, or its journal's lock is held)
is never removed, nor the run being started, nor a killed run whose files are not put
back yet (its journal log still holds the user's originals).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from quickdev.rundir.layout import JOURNAL_FILE, RESULT_FILE
from quickdev.rundir.locks import held
from quickdev.rundir.process import run_alive
from quickdev.rundir.result import read_result


@dataclass(frozen=True)
class Retention:
    keep_runs: int = 50  # 0: no limit by count
    max_size_mb: int = 5000  # 0: no limit by size


# The defaults; package.json's quickdev.runsKeep and quickdev.runsMaxSizeMb say the same
# (a test compares them).
RETENTION = Retention()
# A distributed job's ranks are run directories inside the job's own: they prune nothing.
KEEP_ALL = Retention(keep_runs=0, max_size_mb=0)


def prune_runs(
    runs_root: Path, retention: Retention, protect: frozenset[str] = frozenset()
) -> list[Path]:
    """Remove the oldest finished runs beyond the count or size; returns what was removed."""
    try:
        runs = sorted((d for d in runs_root.iterdir() if (d / RESULT_FILE).is_file()), reverse=True)
    except OSError:
        return []
    removed = []
    total = 0
    for index, run_dir in enumerate(runs):
        total += _size(run_dir)
        over_count = retention.keep_runs and index >= retention.keep_runs
        over_size = retention.max_size_mb and total > retention.max_size_mb * 1024 * 1024
        if (over_count or over_size) and run_dir.name not in protect and not busy(run_dir):
            shutil.rmtree(run_dir, ignore_errors=True)
            removed.append(run_dir)
    return removed


def delete_run(run_dir: Path, ended: bool = False) -> None:
    """Remove one run; ValueError when it is still running. ``ended``: the caller saw its
    process end (a job cancelled before it wrote anything leaves no record of its own)."""
    reason = busy(run_dir, ended)
    if reason:
        raise ValueError(f"run {run_dir.name} {reason}")
    shutil.rmtree(run_dir)


def busy(run_dir: Path, ended: bool = False) -> str | None:
    """Why ``run_dir`` must stay, or None."""
    journal = run_dir / JOURNAL_FILE
    if journal.exists():
        if held(journal):
            return "is still running; cancel it first"
        return "holds files of yours that are not put back yet; run any quickdev command first"
    # A job killed before it wrote its end still says "running": its processes tell.
    if ended:
        return None
    alive = run_alive(run_dir)
    if alive:
        return "is still running; cancel it first"
    result = read_result(run_dir)
    if alive is None and (result is None or result.status == "running"):
        return "is still running; cancel it first"
    return None


def _size(run_dir: Path) -> int:
    total = 0
    for root, _, files in os.walk(run_dir):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total
