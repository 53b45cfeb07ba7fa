"""Process facts shared by every quickdev command, the job, the server and TensorBoard:
exit statuses, whether a process still runs, a free loopback port."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

# The exit status of every quickdev command (the command-line contract, docs/architecture.md).
EXIT_PASSED = 0  # the job passed, or stopped at a budget
EXIT_FAILED = 1  # the user's code failed
EXIT_USAGE = 2  # a bad option or a missing script: one line on stderr
EXIT_QUICKDEV_ERROR = 3  # Quickdev's own code failed in something the job was asked for


def exit_status(status: str, script_code: int) -> int:
    """The exit status of a job whose verdict is ``status`` (rundir/verdict.py);
    ``script_code``: the one the script's own outcome gave (a failure keeps its code)."""
    if status == "error":
        return EXIT_QUICKDEV_ERROR
    if status == "failed" and script_code == EXIT_PASSED:
        return EXIT_FAILED
    return script_code


# Where this package is installed: the job puts its parent on the path, and tells the
# user's frames from ours by it.
PACKAGE_DIR = Path(__file__).resolve().parent
# Where helper processes (TensorBoard, PID injection) run: `python -m` puts the working
# directory first on sys.path, and the filesystem root holds no Python modules, unlike a
# workspace (or a shared /tmp).
NEUTRAL_CWD = os.path.abspath(os.sep)
# The directory holding a debugpy the job may fall back on when the user's own
# environment has none (the extension bundles one); it is added last to sys.path.
DEBUGPY_PATH_ENV = "QUICKDEV_DEBUGPY_PATH"
# "PID:START" of the language server that started a job (``process_token``): the job ends
# itself once that process is gone, so a killed editor leaves no training behind.
SERVER_PROCESS_ENV = "QUICKDEV_SERVER_PROCESS"


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel just handed out and released: free unless someone grabs it next."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def pid_alive(pid: object) -> bool:
    """True while ``pid`` runs; a zombie (ended, not yet reaped) counts as ended."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, but it exists
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc here: the signal check is all we have


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (/proc/PID/stat field 22); None if
    unknown. A PID is reused once its process ends; the pair (PID, start) is not."""
    try:
        # The command name (field 2) may hold spaces and parentheses: split after its end.
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def command_line(pid: int) -> tuple[str, ...] | None:
    """The arguments ``pid`` runs with (/proc/PID/cmdline); None if unknown."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return tuple(raw.decode("utf-8", errors="replace").split("\0")[:-1])


def same_process(pid: object, start: object) -> bool:
    """Whether ``pid`` still runs and is the process that started at ``start`` ticks.

    Without a recorded start (an older job) or /proc, only whether it runs is known.
    """
    if not pid_alive(pid):
        return False
    assert isinstance(pid, int)
    if not isinstance(start, int):
        return True
    now = start_ticks(pid)
    return now is None or now == start


def process_token(pid: int) -> str:
    """``PID:START``: names one process for as long as it runs, unlike a bare PID."""
    start = start_ticks(pid)
    return f"{pid}:{'' if start is None else start}"


def parse_process_token(text: str) -> tuple[int, int | None] | None:
    """The (pid, start) of a ``process_token``; None for anything else."""
    pid, sep, start = text.partition(":")
    if not sep or not pid.isdigit() or not (start == "" or start.isdigit()):
        return None
    return int(pid), int(start) if start else None


def group_alive(pgid: int, leader_start: int | None) -> bool:
    """Whether process group ``pgid``, led by the process that started at ``leader_start``
    ticks, still has members.

    While the leader runs, its start time tells it from a reused PID. Once it ended, the
    kernel hands its PID out again only after the last member of its group ended, so a
    group that still answers under that number is the same group.
    """
    if pgid <= 0 or (pid_alive(pgid) and not same_process(pgid, leader_start)):
        return False
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return _has_running_member(pgid)


def _has_running_member(pgid: int) -> bool:
    """Whether a member of the group is more than a zombie (killed, not yet reaped by
    whoever adopted it); without /proc, the group's existence is all we know."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return True
    for name in names:
        if not name.isdigit():
            continue
        try:
            fields = Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (0 where it cannot be read)."""
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def memory_oom_kills(cgroup: str | None = None) -> tuple[str, int] | None:
    """``(cgroup, count)``: how many processes the kernel's OOM killer has ended in a
    memory cgroup (this process's by default); None where it cannot be read. A job records
    it at its start, so that whoever finds the job dead can tell an out-of-memory kill."""
    if cgroup is None:
        cgroup = _memory_cgroup()
        if cgroup is None:
            return None
    # cgroup v2 names the group "0::/path"; v1 "N:memory:/path" (kept as "memory:/path").
    v1 = cgroup.startswith("memory:")
    path = cgroup.removeprefix("memory:")
    root = Path("/sys/fs/cgroup")
    candidates = (
        [root / "memory" / path.lstrip("/") / "memory.oom_control"]
        if v1
        else [
            root / path.lstrip("/") / "memory.events",
            root / "unified" / path.lstrip("/") / "memory.events",
        ]
    )
    for candidate in candidates:
        try:
            text = candidate.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill" and value.strip().isdigit():
                return cgroup, int(value)
    return None


def _memory_cgroup() -> str | None:
    """This process's memory cgroup as /proc/self/cgroup says it; v1's memory controller
    first (it counts the kills where both are mounted)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    unified = None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return f"memory:{path}"
        if controllers == "":
            unified = path
    return unified
