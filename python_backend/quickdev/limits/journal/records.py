"""The journal's log on disk: one JSON object a line, appended and fsynced before each change.

Record kinds (``path`` is absolute):

- ``start``  ``{"pid", "cwd", "run_dir"}``: the first line.
- ``absent`` nothing was at ``path``: whatever is there at the end is the job's.
- ``file``   the original is kept at ``backup`` (``how``: rename, link or copy); a
  backup that does not exist means the change never happened.
- ``dir``    a directory was at ``path`` (its ``mode``, ``mtime_ns``, ``atime_ns``); it
  is made again if the job removed it, and its mode and times are put back.
- ``folder`` the job is about to add or remove a name in the folder ``path`` (its
  ``mode``, ``mtime_ns``, ``atime_ns`` then, at ``t``): its times are put back. Of several
  (another job's, handed over), the earliest is the original.
- ``shared`` another running job (``owner``, a run directory) holds the original.
- ``listing`` the ``names`` in the folder ``path`` when the job first opened a file
  there: a name that is new at the end and has no record of its own was added by a
  writer without audit events (native code), and is the job's too.
- ``wrote``  the job (``pid``, at ``t``; ``native``: a library in native code) is about
  to write ``path``: a later notice of a write there is the job's (``edits``).
- ``edited`` someone else wrote ``path`` (its ``size``, ``mtime_ns``, ``ino`` then): the
  person's version, kept at the end if nothing of the job's came after.
- ``watching`` the job watches for the person's edits, and touches the log as a
  heartbeat every ``heartbeat_s``.

The job holds an exclusive ``flock`` on its log while it runs: the kernel drops it when
the process dies, however it dies, so "is the writer alive" needs no pid file.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

from quickdev.rundir.locks import held, hold

Record = dict[str, Any]


_UNSYNCED = frozenset({"absent", "listing", "wrote", "watching", "folder"})


class JournalLog:
    """The running job's own log: created, locked and synced before the first change.

    A child process of the job (``children``) appends to the job's log without the lock
    (``own=False``): the job holds it, and restores what its children changed too."""

    def __init__(self, path: Path, *, own: bool = True) -> None:
        self.path = path
        if not own:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            return
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        hold(self._fd)
        _fsync_dir(path.parent)

    def append(self, record: Record) -> None:
        # A record that guards a user's original (its backup, a folder to make again, the
        # person's edit) is synced before the change: a power cut must not strand it.
        # ``absent`` and ``listing`` records only name the job's own new files, ``wrote``
        # and ``watching`` serve the running job's watcher, and an fsync costs
        # milliseconds, the journal's largest cost: they reach the disk with the next
        # synced record, or the kernel's writeback. A power cut before then can leave a
        # new file of the job's behind; it never loses a file of the user's.
        append_line(self._fd, record, sync=record["kind"] not in _UNSYNCED)

    def finish(self, done_path: Path) -> None:
        """The tree is restored: the log is renamed, so no later command replays it."""
        os.rename(self.path, done_path)
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # releases the lock
            self._fd = -1


def append_line(fd: int, record: Record, *, sync: bool = True) -> None:
    # Each record starts on a line of its own: a write cut short by a full disk leaves a
    # torn line that the next record does not run into (``read_records`` skips it).
    line = ("\n" + json.dumps(record) + "\n").encode("utf-8")
    written = os.write(fd, line)
    if written != len(line):  # a full disk part-way: the record is not whole
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    if sync:
        os.fsync(fd)


def append_to(path: Path, record: Record) -> None:
    """Append to another job's log (a handover); O_APPEND keeps the line whole."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        append_line(fd, record)
    finally:
        os.close(fd)


def read_records(path: Path) -> list[Record]:
    """Every whole record; a line torn by a power cut is the last one and is left out."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("kind"), str):
            records.append(record)
    return records


def writer_alive(path: Path) -> bool:
    """Whether the job that writes the log ``path`` is running."""
    return held(path)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
