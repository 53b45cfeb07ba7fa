"""Attaching a debugger to a process that is already running.

Two ways in:

* a quick-dev job accepts a debugger on SIGUSR1 (``quickdev.job.attach_handler``):
  this module sends the signal, once the job's ``process.json`` proves that the process
  under its PID is the job, and waits for ``RUN_DIR/debugpy.json``.
* any other Python process: debugpy's own PID injection (``python -m debugpy
  --listen ADDR --pid PID``), which needs gdb and permission to ptrace the target.

This module must not import torch: the language server and ``quickdev attach`` use it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from quickdev.injection import injection_problem
from quickdev.job.attach_handler import ATTACH_SIGNAL_NAME
from quickdev.processes import free_port, pid_alive
from quickdev.rundir.jsonio import read_json_object
from quickdev.rundir.layout import ATTACH_FILE, DEBUGPY_FILE, LOG_FILE, rank_dir_name
from quickdev.rundir.process import job_record

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
_CAP_SYS_PTRACE = 19


class AttachError(Exception):
    """Attaching is not possible; the message is one line that names the fix."""


# --- from outside: a quick-dev run ----------------------------------------------------


def attach_to_run(run_dir: Path, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, object]:
    """Ask a running quick-dev job for a debugger; returns ``{"host", "port", "pid"}``."""
    if not run_dir.is_dir():
        raise AttachError(f"no run directory at {run_dir}: pass the directory of a running job")
    record = job_record(run_dir)
    if not (run_dir / ATTACH_FILE).is_file() or record is None:
        if (run_dir / rank_dir_name(0)).is_dir():
            raise AttachError(
                f"{run_dir} is a distributed job: attach to one of its ranks, "
                f"e.g. 'quickdev attach --run {run_dir / rank_dir_name(0)}'"
            )
        raise AttachError(
            f"{run_dir} has no {ATTACH_FILE}: the job has not started yet, or was not started "
            "by 'quickdev run'; for another process use 'quickdev attach --pid PID'"
        )
    pid = record.pid
    if not pid_alive(pid):
        raise AttachError(f"the job in {run_dir} (PID {pid}) is no longer running")
    doubt = record.doubt()
    if doubt is not None:
        # Signalling it would stop (SIGUSR1's default) whatever process has the PID now.
        raise AttachError(f"the job in {run_dir} was not signalled: {doubt}")
    address = read_json_object(run_dir / DEBUGPY_FILE)
    if address and address.get("pid") == pid and _listens(address):
        return address
    os.kill(pid, getattr(signal, ATTACH_SIGNAL_NAME))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        address = read_json_object(run_dir / DEBUGPY_FILE)
        if address and address.get("pid") == pid:
            return address
        if not pid_alive(pid):
            raise AttachError(f"the job in {run_dir} (PID {pid}) ended before debugpy started")
        time.sleep(0.05)
    raise AttachError(
        f"the job (PID {pid}) did not start debugpy within {timeout_s:.0f}s: its main thread "
        "may be blocked in native code (a collective, a long kernel), where Python cannot "
        f"take the signal; see {run_dir / LOG_FILE}, or try 'quickdev attach --pid {pid}'"
    )


def _listens(address: dict[str, object]) -> bool:
    """Whether a socket listens on the address's port, without connecting to it.

    A probing connection would count as a debugger client to debugpy's adapter and
    spoil the real client's session, so this reads the kernel's socket table instead.
    """
    port = address.get("port")
    if not isinstance(port, int):
        return False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            # fields[1] is "ADDR:PORT" in hex; state 0A is LISTEN
            if (
                len(fields) > 3
                and fields[3] == "0A"
                and int(fields[1].rpartition(":")[2], 16) == port
            ):
                return True
    return False


# --- from outside: any Python process -------------------------------------------------


def attach_to_pid(
    pid: int, host: str = "127.0.0.1", port: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S
) -> dict[str, object]:
    """Inject debugpy into a running Python process; returns ``{"host", "port", "pid"}``."""
    check_can_attach_to_pid(pid)
    port = port or free_port(host)
    cmd = [sys.executable, "-m", "debugpy", "--listen", f"{host}:{port}", "--pid", str(pid)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise AttachError(
            f"injecting debugpy into PID {pid} took over {timeout_s:.0f}s; the process may be "
            "stuck in native code without the GIL released"
        ) from None
    output = proc.stdout + proc.stderr
    if "ptrace: Operation not permitted" in output:
        raise AttachError(_ptrace_denied_message(pid))
    if proc.returncode != 0:
        last = (output.strip().splitlines() or ["no output"])[-1]
        raise AttachError(f"debugpy could not inject into PID {pid}: {last}")
    address: dict[str, object] = {"host": host, "port": port, "pid": pid}
    deadline = time.monotonic() + timeout_s
    while not _listens(address):
        if not pid_alive(pid):
            raise AttachError(f"PID {pid} ended while debugpy was being injected")
        if time.monotonic() > deadline:
            raise AttachError(
                f"debugpy was injected into PID {pid} but does not listen on {host}:{port} "
                f"after {timeout_s:.0f}s; is it a CPython process?"
            )
        time.sleep(0.05)
    return address


def check_can_attach_to_pid(pid: int) -> None:
    """Raise AttachError naming exactly what is missing (gdb, ptrace permission, the process)."""
    if not pid_alive(pid):
        raise AttachError(f"no process with PID {pid}")
    if pid == os.getpid():
        raise AttachError("cannot attach to this process itself")
    program = _program_of(pid)
    if program is not None and not _runs_python(pid, program):
        raise AttachError(f"PID {pid} is not a Python process (it runs {program})")
    gdb = shutil.which("gdb")
    if gdb is None:
        raise AttachError(
            "gdb is not installed: debugpy attaches to a PID through gdb; install it "
            "('apt-get install gdb', or 'make system-deps' as root)"
        )
    scope = _ptrace_scope()
    privileged = _has_cap_sys_ptrace()
    if scope == 3:
        raise AttachError(
            "ptrace is disabled on this machine (kernel.yama.ptrace_scope=3) until reboot; "
            "start the process with 'quickdev run' to attach on a signal instead"
        )
    if scope == 2 and not privileged:
        raise AttachError(
            "ptrace needs admin rights here (kernel.yama.ptrace_scope=2): run as root, or "
            "'sudo sysctl kernel.yama.ptrace_scope=1'"
        )
    if scope == 1 and not privileged:
        raise AttachError(
            "ptrace is limited to child processes (kernel.yama.ptrace_scope=1): run "
            "'sudo sysctl kernel.yama.ptrace_scope=0', or attach as root"
        )
    try:
        os.kill(pid, 0)
    except PermissionError:
        raise AttachError(
            f"PID {pid} belongs to another user: attach as that user or as root"
        ) from None
    problem = injection_problem(gdb)
    if problem is not None:
        raise AttachError(
            f"gdb cannot run code in a traced process on this machine ({problem}), so "
            f"injecting debugpy would kill PID {pid}; start the script with 'quickdev run' "
            "instead: its jobs accept a debugger through SIGUSR1 ('quickdev attach --run')"
        )


def _program_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None  # not Linux, or not ours to look at: let the injection say what is wrong


def _runs_python(pid: int, program: str) -> bool:
    if "python" in Path(program).name.lower():
        return True
    # An embedding program (uwsgi, a custom launcher) maps libpython instead.
    try:
        return "libpython" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return True


def _ptrace_scope() -> int:
    try:
        return int(Path("/proc/sys/kernel/yama/ptrace_scope").read_text().strip())
    except (OSError, ValueError):
        return 0  # no Yama: classic rules (same user may ptrace)


def _has_cap_sys_ptrace() -> bool:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> _CAP_SYS_PTRACE & 1)
    except (OSError, ValueError):
        pass
    return os.geteuid() == 0 if hasattr(os, "geteuid") else False


def _ptrace_denied_message(pid: int) -> str:
    return (
        f"the kernel refused to let gdb ptrace PID {pid}: in a container, start it with "
        "'--cap-add=SYS_PTRACE' (docker) or allow ptrace in its seccomp profile; otherwise "
        "'sudo sysctl kernel.yama.ptrace_scope=0'"
    )


def main(run_dir: Path | None, pid: int | None, timeout_s: float = DEFAULT_TIMEOUT_S) -> int:
    """``quickdev attach``: one JSON line ``{"host", "port", "pid"}``, or one error line."""
    try:
        if run_dir is not None:
            address = attach_to_run(run_dir, timeout_s)
        elif pid is not None:
            address = attach_to_pid(pid, timeout_s=timeout_s)
        else:
            raise AttachError("give --run RUN_DIR or --pid PID")
    except AttachError as exc:
        print(f"quickdev attach: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(address), flush=True)
    return 0
