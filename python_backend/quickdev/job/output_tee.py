"""A copy of the script's stdout and stderr in ``RUN_DIR/output.log``.

Python-level only: text the script (or a library in Python) prints reaches both the
terminal and the file; output written by C code straight to the file descriptors
reaches the terminal only.

The file is the job's, the print the script's: where the file cannot be written (a full
disk), the script's print still succeeds, the copy stops, and the job says so once at
its end (``unwritten``).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any, TextIO

from quickdev import unwritten
from quickdev.limits.patching import Patcher
from quickdev.rundir.layout import STDOUT_FILE


class _Log:
    """``output.log``, shared by the stdout and stderr tees: a write or flush that fails
    stops the copy for good (a full disk) rather than raise into the script's print."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file: TextIO | None = path.open("a", encoding="utf-8", errors="replace")

    def write(self, text: str, *, flush: bool) -> None:
        if self.file is None or self.file.closed:
            return
        try:
            self.file.write(text)
            if flush:
                self.file.flush()
        except OSError as exc:
            self._give_up(exc)

    def flush(self) -> None:
        self.write("", flush=True)

    def close(self) -> None:
        if self.file is None:
            return
        try:
            self.file.close()
        except OSError as exc:  # what was left in the buffer did not fit
            self._give_up(exc)

    def _give_up(self, exc: OSError) -> None:
        unwritten.failed(self.path, exc)
        file, self.file = self.file, None
        if file is not None:
            with contextlib.suppress(OSError):  # its buffer again: dropped with it
                file.close()


class _Tee:
    """Writes go to the original stream and the log; everything else is the original's."""

    def __init__(self, stream: TextIO, log: _Log) -> None:
        self._stream = stream
        self._log = log
        self.mid_line = False  # the last text written did not end a line

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        if text:
            self.mid_line = not text.endswith("\n")
        # Each line as it ends: the editor shows the file live, and a line followed by a
        # long quiet step must not wait in a buffer. Not before: the job's other processes
        # append to the same log, and a line written in two pieces would have theirs in
        # between. (A progress bar's "\r" ends its line; tqdm redraws ~10 times a second.)
        self._log.write(text, flush=text.endswith(("\n", "\r")))
        return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._stream.flush()
        self._log.flush()  # what the script flushes, it means to be seen

    def flush_log(self) -> None:
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
    log = _Log(path)
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


def stdout_mid_line() -> bool:
    """Whether the script left stdout in the middle of a line (so --json starts a new one)."""
    return _stdout_tee is not None and _stdout_tee.mid_line
