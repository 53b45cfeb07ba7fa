"""Start, reuse and stop TensorBoard servers, one per logdir.

A library for the language server and a thin command line. Imports neither torch
nor tensorboard: the server runs in its own process, started through our launcher
(``python -m quickdev.tensorboard.launch``) with the interpreter that has the plugin.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from quickdev.processes import NEUTRAL_CWD, free_port, pid_alive
from quickdev.tensorboard import state
from quickdev.tensorboard.launch import EXIT_MISSING_PLUGIN

LAUNCHER = "quickdev.tensorboard.launch"
HOST = "127.0.0.1"
START_TIMEOUT_S = 60.0
ANSWER_TIMEOUT_S = 3.0  # a server that takes longer to answer a trivial request is hung
STOP_TIMEOUT_S = 5.0


class TensorBoardError(Exception):
    """TensorBoard could not be started; the message is one line that says why."""


class BadLogdir(TensorBoardError):
    """The logdir given cannot be a directory of runs."""


@dataclass
class TensorBoardServer:
    url: str
    pid: int
    logdir: Path
    reused: bool = False  # found running rather than started by this call


# Servers this process started, so it can reap them when they stop.
_children: dict[int, subprocess.Popen[bytes]] = {}

# Loopback never goes through a proxy, whatever HTTP_PROXY says.
_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _alive(pid: int) -> bool:
    child = _children.get(pid)
    if child is not None:
        return child.poll() is None
    return pid_alive(pid)


def _is_our_server(pid: int) -> bool:
    """Alive and running our launcher, so a recycled pid is never killed by mistake."""
    if not _alive(pid):
        return False
    try:
        return LAUNCHER.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return sys.platform != "linux"  # no /proc elsewhere: trust the record


def _answers(url: str, logdir: Path) -> bool:
    """The server answers quickly, and for this logdir (not some other server on the port)."""
    try:
        with _direct.open(url + "data/environment", timeout=ANSWER_TIMEOUT_S) as r:
            env = json.loads(r.read())
    except (OSError, ValueError):
        return False
    return isinstance(env, dict) and env.get("data_location") == str(logdir)


def _signal_group(pid: int, sig: int) -> None:
    if hasattr(os, "killpg"):
        try:
            # The launcher leads its own session: this reaches its helpers too.
            os.killpg(pid, sig)
            return
        except (ProcessLookupError, PermissionError):
            pass
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)  # on Windows, any signal terminates the process


def _wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            _children.pop(pid, None)
            return True
        time.sleep(0.05)
    return False


def _kill(pid: int, hung: bool = False) -> None:
    if not hung:
        _signal_group(pid, signal.SIGTERM)
        if _wait_gone(pid, STOP_TIMEOUT_S):
            return
    # A hung or stopped process may never act on SIGTERM.
    _signal_group(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
    _wait_gone(pid, STOP_TIMEOUT_S)


def _last_line(log_file: Path) -> str:
    try:
        lines = [ln for ln in log_file.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def _start(
    logdir: Path, python: str, owner_pid: int | None, timeout_s: float
) -> state.ServerRecord | None:
    """Start one server; None when its port was taken meanwhile (the caller retries)."""
    port = free_port(HOST)
    log_file = state.log_path(logdir)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    cmd = [python, "-m", LAUNCHER, "--logdir", str(logdir), "--port", str(port)]
    if owner_pid is not None:
        cmd += ["--owner-pid", str(owner_pid)]
    env = dict(os.environ)
    # The interpreter with the plugin need not have quickdev installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH")) if p)
    with log_file.open("wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=NEUTRAL_CWD,
            start_new_session=True,
        )
    _children[proc.pid] = proc
    url = f"http://{HOST}:{port}/"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            _children.pop(proc.pid, None)
            text = log_file.read_text(errors="replace")
            if code == EXIT_MISSING_PLUGIN:
                raise TensorBoardError(_last_line(log_file))
            if "already in use" in text or "could not bind" in text.lower():
                return None
            raise TensorBoardError(
                f"TensorBoard exited with status {code} at start: {_last_line(log_file)} "
                f"(full log: {log_file})"
            )
        if _answers(url, logdir):
            return state.ServerRecord(str(logdir), url, port, proc.pid, str(log_file))
        time.sleep(0.1)
    _kill(proc.pid, hung=True)
    raise TensorBoardError(
        f"TensorBoard did not answer within {timeout_s:.0f} s (full log: {log_file})"
    )


def ensure_tensorboard(
    logdir: Path,
    *,
    python: str | None = None,
    owner_pid: int | None = None,
    timeout_s: float = START_TIMEOUT_S,
) -> TensorBoardServer:
    """The live server for ``logdir``: reused when it answers, else (re)started.

    ``python`` is the interpreter with tensorboard and torch-tb-profiler (default:
    this one). With ``owner_pid`` the server exits when that process does.
    """
    logdir = logdir.expanduser().resolve()
    if logdir.exists() and not logdir.is_dir():
        raise BadLogdir(f"{logdir} is a file; pass the directory that holds the runs")
    try:
        logdir.mkdir(mode=0o700, parents=True, exist_ok=True)  # as a runs root
    except OSError as exc:
        raise BadLogdir(f"cannot create the logdir {logdir}: {exc.strerror}") from None
    with state.locked(logdir):
        record = state.read_record(logdir)
        if record is not None:
            if _is_our_server(record.pid):
                if _answers(record.url, logdir):
                    return TensorBoardServer(record.url, record.pid, logdir, reused=True)
                _kill(record.pid, hung=True)
            state.remove_record(logdir)
        for _attempt in range(3):
            record = _start(logdir, python or sys.executable, owner_pid, timeout_s)
            if record is not None:
                state.write_record(record)
                return TensorBoardServer(record.url, record.pid, logdir)
        raise TensorBoardError("TensorBoard could not bind a free port on 127.0.0.1; try again")


def stop_tensorboard(logdir: Path) -> int | None:
    """Stop the server for ``logdir``; returns its pid, or None when none was running."""
    logdir = logdir.expanduser().resolve()
    with state.locked(logdir):
        record = state.read_record(logdir)
        if record is None:
            return None
        state.remove_record(logdir)
        if not _is_our_server(record.pid):
            return None
        _kill(record.pid)
        return record.pid


class TensorBoardOwner:
    """The servers one long-lived process (the language server) started; stopped with it.

    Each server also watches its owner's pid, so it exits even if the owner is killed.
    """

    def __init__(self, python: str | None = None) -> None:
        self.python = python
        self._started: set[Path] = set()

    def ensure(self, logdir: Path) -> TensorBoardServer:
        server = ensure_tensorboard(logdir, python=self.python, owner_pid=os.getpid())
        if not server.reused:
            self._started.add(server.logdir)
        return server

    def stop_all(self) -> None:
        for logdir in sorted(self._started):
            stop_tensorboard(logdir)
        self._started.clear()
