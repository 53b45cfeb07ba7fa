"""``process.json``: which process writes a run directory, and its process group.

Written by the job (and each rank, and a torchrun parent) before anything else, so that
any language server, not only the one that started the run, can tell whether the run is
live, end it, and ask it for a debugger. The one record of the job's identity: its PID,
when it started and the command line it runs, so that a PID the kernel handed to another
process since (or a record copied from elsewhere) is never signalled.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

from quickdev.processes import (
    command_line,
    group_alive,
    memory_oom_kills,
    pid_alive,
    start_ticks,
)
from quickdev.rundir.jsonio import write_json
from quickdev.rundir.layout import ATTACH_FILE, PROCESS_FILE

NO_GROUP = 0  # a record without a process group: only its process is signalled
# (cgroup, count) of the job's memory cgroup's OOM kills at its start (rundir/killed.py).
OOM_KILLS_KEY = "oom_kills"


@dataclass(frozen=True)
class ProcessRecord:
    pid: int
    start: int | None  # clock ticks since boot (/proc/PID/stat)
    pgid: int
    command: tuple[str, ...] | None = None  # as /proc/PID/cmdline said when recorded
    # This process saw the recorded one running and matched it (or spawned it itself):
    # its group is the run's for as long as it has members, even once the leader ended.
    proven: bool = False

    @property
    def leads_group(self) -> bool:
        """A job started by a server or an interactive shell leads its own group; one started
        by another program (make, a script) shares that program's group, which is not ours
        to end."""
        return self.pid == self.pgid

    def doubt(self) -> str | None:
        """Why the process running under this PID may not be the recorded one (a clause for
        a one-line refusal); None when it is, or when nothing runs there."""
        if not pid_alive(self.pid):
            return None
        now = start_ticks(self.pid)
        if self.proven:
            return None if self.start is None or now == self.start else self._reused()
        if self.start is None:
            return (
                f"its record of PID {self.pid} holds no start time (a copied run folder or "
                "an earlier quickdev), so that process cannot be told from another"
            )
        if now != self.start:
            return self._reused()
        if self.command is None:
            return (
                f"its record of PID {self.pid} holds no command line (an earlier quickdev), "
                "so that process cannot be told from another"
            )
        if command_line(self.pid) != self.command:
            return f"PID {self.pid} runs another command line than the recorded job's"
        return None

    def _reused(self) -> str:
        return f"PID {self.pid} is another process now"

    def alive(self) -> bool:
        """Whether the recorded process, or the group it led, still runs. A live PID whose
        identity is not proven counts as ended: it is never signalled."""
        if pid_alive(self.pid):
            return self.doubt() is None
        # The leader ended; its group lives on while a member runs (a child, a rank), and
        # the kernel gives its number to no other group meanwhile. It is the run's only if
        # this process saw the leader itself: a record alone proves nothing of a group.
        return self.proven and self.leads_group and group_alive(self.pgid, self.start)

    def seen(self) -> ProcessRecord:
        """This record once its leader was seen running and matched."""
        return replace(self, proven=True)


def spawned_record(pid: int) -> ProcessRecord:
    """The record of a job this process has just started, in a session of its own: its
    own child, seen before anything could reuse its PID."""
    return ProcessRecord(pid, start_ticks(pid), pid, proven=True)


def write_process_record(run_dir: Path) -> None:
    pid = os.getpid()
    record: dict[str, object] = {
        "pid": pid,
        "start": start_ticks(pid),
        "pgid": os.getpgrp(),
        "command": list(command_line(pid) or ()),
    }
    # Read back by rundir/killed.py when the job is found dead: did the OOM killer run?
    oom_kills = memory_oom_kills()
    if oom_kills is not None:
        record[OOM_KILLS_KEY] = list(oom_kills)
    write_json(run_dir / PROCESS_FILE, record)


def read_process_records(run_dir: Path) -> list[ProcessRecord]:
    """The records of the run and of its ranks' directories; unreadable ones are skipped.

    A job of an earlier version recorded only ``attach.json`` (its pid and start): that
    process alone, never a group, is the run's, and it is never proven (no command line).
    """
    paths = [run_dir / PROCESS_FILE, *sorted(run_dir.glob(f"*/{PROCESS_FILE}"))]
    if not paths[0].exists():
        paths.append(run_dir / ATTACH_FILE)
    records = []
    for path in paths:
        record = _read(path)
        if record is not None:
            records.append(record)
    return records


def job_record(run_dir: Path) -> ProcessRecord | None:
    """The record of the run's own process (not its ranks'), if it wrote one."""
    return _read(run_dir / PROCESS_FILE) or _read(run_dir / ATTACH_FILE)


def _read(path: Path) -> ProcessRecord | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    pid, start, pgid = (_whole(data.get(key)) for key in ("pid", "start", "pgid"))
    if pid is None:
        return None
    command = data.get("command")
    if not (isinstance(command, list) and command and all(isinstance(a, str) for a in command)):
        command = None
    return ProcessRecord(pid, start, pgid or NO_GROUP, tuple(command) if command else None)


def _whole(value: object) -> int | None:
    """A positive int, else None (bool is no int in JSON)."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def run_alive(run_dir: Path) -> bool | None:
    """Whether any process of the run still runs; None when the run recorded none."""
    records = read_process_records(run_dir)
    return any(r.alive() for r in records) if records else None


def run_doubt(run_dir: Path) -> str | None:
    """Why a process running under one of the run's recorded PIDs is not signalled, when
    none of the run's is proven live; None otherwise."""
    records = read_process_records(run_dir)
    if any(r.alive() for r in records):
        return None
    return next((d for r in records if (d := r.doubt()) is not None), None)
