"""Ending a run's processes, whether this server started the run or not.

Every process that writes a run directory records itself there (``process.json``): the
job, or a torchrun parent and each of its ranks, which torchrun starts in sessions of
their own. Cancelling signals each recorded process group, not only the process this
server spawned, so a rank whose parent died, or a child that ignores SIGTERM, is ended
too. A record whose process is not proven to be the run's (another process has its PID
now, or the record holds no start time or command line to tell) is left alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

from quickdev.processes import pid_alive
from quickdev.rundir.process import ProcessRecord, read_process_records

# After SIGTERM: time for the job to record its end (a torchrun parent: to merge its
# ranks' results) before what is left of the run is killed.
KILL_GRACE_S = 5.0
POLL_S = 0.1


async def end_run(run_dir: Path, spawned: ProcessRecord | None = None) -> bool:
    """SIGTERM to the run's live processes, SIGKILL to their groups once they ended or the
    grace ran out; ``spawned``: the job process this server started, if any. Returns
    False when nothing of the run was running."""
    records = _live(run_dir, spawned)
    if not records:
        return False
    _signal(records, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_S
    while time.monotonic() < deadline and any(
        pid_alive(r.pid) and r.doubt() is None for r in records
    ):
        await asyncio.sleep(POLL_S)
    # Checked again: a group that emptied meanwhile may have a new process under its number.
    _signal([r for r in records if r.alive()], signal.SIGKILL)
    return True


def kill_run(run_dir: Path, spawned: ProcessRecord | None = None) -> None:
    """SIGKILL to everything of the run at once (the server is exiting)."""
    _signal(_live(run_dir, spawned), signal.SIGKILL)


def _live(run_dir: Path, spawned: ProcessRecord | None) -> list[ProcessRecord]:
    """The run's records proven live now, marked seen: what they led is the run's."""
    records = [*([spawned] if spawned else []), *read_process_records(run_dir)]
    return [r.seen() for r in dict.fromkeys(records) if r.alive()]


def _signal(records: list[ProcessRecord], sig: signal.Signals) -> None:
    for record in records:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if record.leads_group:
                os.killpg(record.pgid, sig)
            else:
                os.kill(record.pid, sig)
