"""Two jobs in one folder: the original of a path belongs to the job that touched it first.

A second job that changes the same path records it as ``shared`` (it puts nothing
aside: what it would put aside is the first job's version). When the first job ends
while the second still runs, it hands its backup over instead of restoring, so the
second job keeps reading its own writes and the last one to end restores the original.
Claims are read from the other jobs' logs in the same runs root, under one lock, which
the caller holds (``locked``): deciding the owner and recording the claim are one step.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from quickdev.limits.journal.records import read_records, writer_alive
from quickdev.rundir.layout import JOURNAL_DONE, JOURNAL_FILE, RUNS_LOCK
from quickdev.rundir.locks import locked


class Claims:
    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.runs_root = run_dir.parent

    def live_journals(self) -> list[Path]:
        """The logs of the other jobs in this runs root that are running now."""
        return [
            log
            for log in self.runs_root.glob(f"*/{JOURNAL_FILE}")
            if log.parent != self.run_dir and writer_alive(log)
        ]

    def owner_of(self, path: str) -> str | None:
        """The run directory of a running job that holds ``path``'s original, if any."""
        for log in self.live_journals():
            for record in read_records(log):
                if record.get("path") == path and record["kind"] in ("file", "absent"):
                    return str(log.parent)
        return None

    def recorded_paths(self) -> set[str]:
        """Every path the other running jobs journaled."""
        return {
            r["path"]
            for log in self.live_journals()
            for r in read_records(log)
            if isinstance(r.get("path"), str) and r["kind"] != "listing"
        }

    def sharers(self, path: str) -> list[Path]:
        """The logs of running jobs that recorded ``path`` as shared with this job."""
        mine = str(self.run_dir)
        return [
            log
            for log in self.live_journals()
            if any(
                r["kind"] == "shared" and r.get("path") == path and r.get("owner") == mine
                for r in read_records(log)
            )
        ]

    def in_folders(self, folders: set[str]) -> dict[str, Path]:
        """For each folder of ``folders`` that a running job changes (its own ``folder`` or
        ``dir`` record), that job's log: the folder's mode and times are its to put back."""
        found: dict[str, Path] = {}
        for log in self.live_journals():
            for record in read_records(log):
                if record["kind"] in ("folder", "dir") and record.get("path") in folders:
                    found.setdefault(record["path"], log)
        return found

    def others_wrote(self, since: float) -> dict[str, float]:
        """When other jobs of this runs root (running or done) last announced a write of
        each path, from the logs written since ``since``: their writes are not edits of
        the person's."""
        last: dict[str, float] = {}
        for name in (JOURNAL_FILE, JOURNAL_DONE):
            for log in self.runs_root.glob(f"*/{name}"):
                with contextlib.suppress(OSError):
                    if log.parent == self.run_dir or log.stat().st_mtime < since:
                        continue
                    for record in read_records(log):
                        path, t = record.get("path"), record.get("t", 0.0)
                        if record["kind"] == "wrote" and isinstance(path, str):
                            last[path] = max(last.get(path, 0.0), t)
        return last

    def locked(self) -> contextlib.AbstractContextManager[None]:
        return locked(self.runs_root / RUNS_LOCK)
