"""A copy of the script's stdout and stderr in ``RUN_DIR/output.log``.

Python-level only: text the script (or a library in Python) prints reaches both the
terminal and the file; output written by C code straight to the file descriptors
reaches the terminal only.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO

from quickdev.limits.patching import Patcher
from quickdev.rundir.layout import STDOUT_FILE

# Progress bars write many times a second; the log is flushed at most this often.
_LOG_FLUSH_INTERVAL_S = 1.0


class _Tee:
    """Writes go to the original stream and the log; everything else is the original's."""

    def __init__(self, stream: TextIO, log: TextIO) -> None:
        self._stream = stream
        self._log = log
        self._flushed_at = time.monotonic()
        self.flush_interval_s = _LOG_FLUSH_INTERVAL_S
        self.mid_line = False  # the last text written did not end a line

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        if text:
            self.mid_line = not text.endswith("\n")
        if not self._log.closed:
            self._log.write(text)
            # At the end of a line: the job's other processes append to the same log,
            # and a line written in two pieces would have theirs in between.
            ended = text.endswith(("\n", "\r"))
            if ended and time.monotonic() - self._flushed_at >= self.flush_interval_s:
                self._flushed_at = time.monotonic()
                self._log.flush()
        return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._stream.flush()

    def flush_log(self) -> None:
        if not self._log.closed:
            self._log.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


_stdout_tee: _Tee | None = None


def install(patcher: Patcher, run_dir: Path, *, child: bool = False) -> None:
    """``child``: a process the script started, whose output joins the job's log. Every
    writer appends (``O_APPEND``), so the processes' lines never overwrite each other."""
    global _stdout_tee
    path = run_dir / STDOUT_FILE
    if not child:
        path.write_bytes(b"")
    log = path.open("a", encoding="utf-8", errors="replace")
    _stdout_tee = _Tee(sys.stdout, log)
    patcher.set(sys, "stdout", _stdout_tee)
    patcher.set(sys, "stderr", _Tee(sys.stderr, log))
    patcher.on_undo(log.close)


def flush_log() -> None:
    """Before a fork: text still in the log's buffer would be written by the parent and
    the child alike."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, _Tee):
            stream.flush_log()


def flush_every_line() -> None:
    """In a process the script started: each line reaches the log when it ends. Such a
    process may be ended at any moment (a pool's ``terminate()``, ``os._exit``, the job's
    SIGKILL), and what it printed must not die with it in a buffer."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, _Tee):
            stream.flush_interval_s = 0.0
            stream.flush_log()


def stdout_mid_line() -> bool:
    """Whether the script left stdout in the middle of a line (so --json starts a new one)."""
    return _stdout_tee is not None and _stdout_tee.mid_line
