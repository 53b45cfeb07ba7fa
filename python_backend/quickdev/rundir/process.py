"""``process.json``: which process writes a run directory, and its process group.

Written by the job (and each rank, and a torchrun parent) before anything else, so that
any language server, not only the one that started the run, can tell whether the run is
live and end it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from quickdev.processes import group_alive, same_process, start_ticks
from quickdev.rundir.jsonio import write_json
from quickdev.rundir.layout import ATTACH_FILE, PROCESS_FILE

NO_GROUP = 0  # a record without a process group: only its process is signalled


@dataclass(frozen=True)
class ProcessRecord:
    pid: int
    start: int | None
    pgid: int

    @property
    def leads_group(self) -> bool:
        """A job started by a server or an interactive shell leads its own group; one started
        by another program (make, a script) shares that program's group, which is not ours
        to end."""
        return self.pid == self.pgid

    def alive(self) -> bool:
        if self.leads_group:
            return group_alive(self.pgid, self.start)
        return same_process(self.pid, self.start)


def write_process_record(run_dir: Path) -> None:
    pid = os.getpid()
    write_json(
        run_dir / PROCESS_FILE, {"pid": pid, "start": start_ticks(pid), "pgid": os.getpgrp()}
    )


def read_process_records(run_dir: Path) -> list[ProcessRecord]:
    """The records of the run and of its ranks' directories; unreadable ones are skipped.

    A job of an earlier version recorded only ``attach.json`` (its pid and start): that
    process alone, never a group, is the run's.
    """
    paths = [run_dir / PROCESS_FILE, *sorted(run_dir.glob(f"*/{PROCESS_FILE}"))]
    if not paths[0].exists():
        paths.append(run_dir / ATTACH_FILE)
    records = []
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        pid, start, pgid = (_whole(data.get(key)) for key in ("pid", "start", "pgid"))
        if pid is not None:
            records.append(ProcessRecord(pid, start, pgid or NO_GROUP))
    return records


def _whole(value: object) -> int | None:
    """A positive int, else None (bool is no int in JSON)."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def run_alive(run_dir: Path) -> bool | None:
    """Whether any process of the run still runs; None when the run recorded none."""
    records = read_process_records(run_dir)
    return any(r.alive() for r in records) if records else None
