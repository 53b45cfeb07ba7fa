"""A job that died without writing its end: its final status, said by whoever finds it.

SIGKILL, the kernel's out-of-memory killer or a power cut end a job before it can write
its result, which stays at ``running`` with a duration of 0. The next ``quickdev`` command
and the language server find such runs (the result says ``running``, no process of the
run is alive) and write what can be known: ``killed``, why where the kernel says so, and
how long the job lived (until the last file it wrote). Standard library only: the
language server runs this.

The kernel's word, read without assuming privileges: the OOM kill count of the job's
memory cgroup, recorded at the job's start in ``process.json`` (cgroup v2
``memory.events``, v1 ``memory.oom_control``), and the kernel log (``/dev/kmsg``, where
this user may read it) naming the job's PID. A signal is named only where the process
that waited for the job saw it (the server).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
from datetime import datetime
from pathlib import Path

from quickdev.processes import memory_oom_kills
from quickdev.rundir.layout import LOG_FILE, PROCESS_FILE, PROGRESS_FILE, RESULT_FILE, STDOUT_FILE
from quickdev.rundir.process import OOM_KILLS_KEY, job_record, run_alive
from quickdev.rundir.result import JobResult, read_result


def settle_killed(runs_root: Path) -> list[str]:
    """Every run under ``runs_root`` whose job died mid-run gets its final status; one
    line per run settled."""
    try:
        results = sorted(runs_root.glob(f"*/{RESULT_FILE}"))
    except OSError:
        return []
    lines = []
    for path in results:
        line = settle_run(path.parent)
        if line is not None:
            lines.append(line)
    return lines


def settle_run(run_dir: Path, exit_signal: int | None = None) -> str | None:
    """Settle one run if its result still says ``running`` and none of its processes
    lives; ``exit_signal``: the signal that ended the job, where the caller saw it."""
    result = read_result(run_dir)
    if result is None or result.status != "running":
        return None
    # No process record (a job of the in-process API, or one that died before writing it):
    # nothing proves it ended, so it is left alone.
    if run_alive(run_dir) is not False:
        return None
    reason = why_killed(run_dir, exit_signal)
    result.status = "killed"
    result.stop_reason = reason
    result.duration_s = _lived_s(run_dir, result)
    result.write(run_dir)
    return (
        f"quickdev: run {run_dir.name} was {reason} after {result.duration_s:.0f} s; "
        "its result now says so"
    )


def why_killed(run_dir: Path, exit_signal: int | None = None) -> str:
    """``killed: out of memory?`` where the kernel says so, else what is known."""
    evidence = _oom_evidence(run_dir)
    if evidence:
        return f"killed: out of memory? ({evidence})"
    if exit_signal:
        return f"killed by {_signal_name(exit_signal)}"
    return "killed: it ended without writing its result (SIGKILL, out of memory or a power cut)"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _oom_evidence(run_dir: Path) -> str | None:
    record = job_record(run_dir)
    if record is not None and _kernel_log_names(record.pid):
        return f"the kernel's log says its OOM killer ended PID {record.pid}"
    recorded = _recorded_oom_kills(run_dir)
    if recorded is not None:
        cgroup, before = recorded
        now = memory_oom_kills(cgroup)
        if now is not None and now[1] > before:
            return "the kernel's OOM killer ran in the job's memory cgroup while it ran"
    return None


def _recorded_oom_kills(run_dir: Path) -> tuple[str, int] | None:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads((run_dir / PROCESS_FILE).read_text(encoding="utf-8"))
        found = data.get(OOM_KILLS_KEY) if isinstance(data, dict) else None
        if (
            isinstance(found, list)
            and len(found) == 2
            and isinstance(found[0], str)
            and isinstance(found[1], int)
        ):
            return found[0], found[1]
    return None


def _kernel_log_names(pid: int) -> bool:
    """Whether the kernel log says the OOM killer ended ``pid`` ("Killed process PID" or
    "oom-kill:...,pid=PID,"); False where the log cannot be read (no permission)."""
    pattern = re.compile(rf"(Killed process {pid}\b|oom-kill:.*[,:]pid={pid}\b)")
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        for _ in range(100_000):  # the ring buffer holds a bounded number of records
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:
                return False  # read to the end
            except OSError:
                continue  # a record overwritten while reading (EPIPE): go on
            if not record:
                return False
            if pattern.search(record.decode("utf-8", "replace")):
                return True
        return False
    finally:
        os.close(fd)


def _lived_s(run_dir: Path, result: JobResult) -> float:
    """From the job's start to the last file it wrote: as long as it is known to have run."""
    try:
        started = datetime.fromisoformat(result.started.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return result.duration_s
    last = started
    for name in (PROGRESS_FILE, LOG_FILE, STDOUT_FILE, PROCESS_FILE):
        with contextlib.suppress(OSError):
            last = max(last, (run_dir / name).stat().st_mtime)
    return round(max(last - started, 0.0), 3)
