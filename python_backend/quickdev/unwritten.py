"""The job's own files that could not be written: said once, in one line, never a traceback.

A full disk, or a runs directory that fills while the job runs, makes the job's own
writes fail: the copy of the script's output (``output.log``), the job's log
(``job.log``), ``result.json``, what an observer writes (the shapes, a trace). None of
them may stop the job's work (the restore of the person's files comes first and runs
whatever they do), raise into the script (its ``print`` is not the one that failed), or
print a traceback; nor is it Quickdev's error or the script's (the verdict is what it
would have been). Each writer reports its failure here and goes on without the file; the
terminal gets one line at the end.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import threading
from pathlib import Path
from typing import TypeGuard

from quickdev.rundir.layout import RESULT_FILE
from quickdev.rundir.result import JobResult

_lock = threading.Lock()
_failed: dict[str, str] = {}  # file name -> why, in the order they failed


def reset() -> None:
    """A new job in this process (the in-process API runs several)."""
    with _lock:
        _failed.clear()


def failed(what: Path | str, exc: OSError) -> None:
    """``what`` (a path, or what it is in words) could not be written."""
    with _lock:
        _failed.setdefault(os.path.basename(what), exc.strerror or str(exc))


def disk_full(exc: BaseException) -> TypeGuard[OSError]:
    """No room left (the disk, or the person's quota)."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def line(run_dir: Path | str) -> str | None:
    """``quickdev: could not write output.log, result.json in RUN_DIR (No space left on
    device); …``, or None when every file was written."""
    with _lock:
        if not _failed:
            return None
        names = ", ".join(_failed)
        why = "; ".join(dict.fromkeys(_failed.values()))
    return (
        f"quickdev: could not write {names} in {run_dir} ({why}); free space there or pass "
        "--runs-dir with another folder"
    )


def write_result(result: JobResult, run_dir: Path) -> bool:
    """``result.write``, a failure reported here; whether it was written."""
    try:
        result.write(run_dir)
    except OSError as exc:
        failed(run_dir / RESULT_FILE, exc)
        return False
    return True


class LogFile(logging.FileHandler):
    """The job's log: a record that cannot be written is dropped and reported here, where
    logging would print a traceback on stderr for each."""

    def handleError(self, record: logging.LogRecord) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            failed(self.baseFilename, exc)
        else:
            super().handleError(record)

    def close(self) -> None:
        try:
            super().close()  # flushes what a full disk left in the buffer
        except OSError as exc:
            failed(self.baseFilename, exc)
