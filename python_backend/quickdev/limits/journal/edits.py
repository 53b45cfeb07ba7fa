"""The person's own edits win: a file saved over (or recreated) while the job runs keeps it.

The journal lets the job write where the script asks, so the person's editor and the
job write the same path. To tell their writes apart, every write the journal lets
through is announced first (a ``wrote`` record, from the job and its Python children),
and a watcher thread reads the kernel's notices (inotify) of files closed after
writing or renamed into place, in the folders of the files whose originals the
journal keeps. Each notice is matched with an announcement not yet matched (a
*credit*); a notice with none is someone else's, and an ``edited`` record (synced)
names the path and its state then. At the end, and at recovery after a kill, a path
whose last word is such an edit, still in that state, keeps the person's version; the
original goes to the run directory (``restore``).

The kernel merges identical notices that are not read yet, so one notice may stand for
several of the job's writes: credits left over once no announcing process holds the file
open are dropped after ``CREDIT_S``. A native library may open and close a file more than
once for one announcement (safetensors does): its notices within ``BURST_S`` are the job's.

After a kill, edits made while no job ran leave no notice: the watcher touches the log
every ``HEARTBEAT_S``, so recovery takes a path whose change time is later than the
log's last touch (plus twice that period) as changed after the job died, by someone else.

When in doubt the job's version is taken (put into the run directory, not lost): an
edit within a second of the job's own write of the same file, an edit while the job
writes it, a full event queue. Linux only; other systems put every original back.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import struct
import sys
import threading
import time
from pathlib import Path

from quickdev.limits.journal.records import JournalLog, Record
from quickdev.threads import own_thread

HEARTBEAT_S = 1.0
CREDIT_S = 0.5
BURST_S = 1.0
_IN_CLOSE_WRITE, _IN_MOVED_TO, _IN_Q_OVERFLOW = 0x8, 0x80, 0x4000
_IN_NONBLOCK, _IN_CLOEXEC = 0o4000, 0o2000000
_EVENT = struct.Struct("iIII")


class Credits:
    """The job's announced writes of one path that no notice has matched yet."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.pids: set[int] = set()
        self.last_native = 0.0

    def announced(self, record: Record) -> None:
        self.times.append(record.get("t", 0.0))
        self.pids.add(record.get("pid", 0))
        if record.get("native"):
            self.last_native = record.get("t", 0.0)

    def take(self, now: float) -> bool:
        """A notice: the job's if a credit is left, or a native writer's burst goes on."""
        if self.times:
            self.times.pop(0)
            return True
        return now - self.last_native < BURST_S

    def expire(self, path: str, now: float) -> None:
        """Credits merged notices left over, once no announcing process holds the file."""
        if self.times and now - self.times[-1] >= CREDIT_S and not _held(path, self.pids):
            self.times.clear()


def _held(path: str, pids: set[int]) -> bool:
    for pid in pids:
        folder = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(folder)
        except OSError:
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                if os.readlink(f"{folder}/{fd}") == path:
                    return True
    return False


class EditWatcher:
    def __init__(self, log: JournalLog) -> None:
        self.log = log
        self._pid = os.getpid()
        libc = ctypes.CDLL(None, use_errno=True)
        self._add_watch = libc.inotify_add_watch
        self._add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self._folders: dict[int, str] = {}
        self._watched: set[str] = set()
        self._originals: set[str] = set()
        self._listed: set[str] = set()
        self._credits: dict[str, Credits] = {}
        self._offset = 0
        self._rest = b""
        self._stop = threading.Event()
        self._wake_r, self._wake_w = os.pipe()  # stop() wakes the poll at once
        self._lock = threading.Lock()
        self.overflowed = False
        log.append({"kind": "watching", "heartbeat_s": HEARTBEAT_S})
        self._thread = own_thread(self._run, "quickdev-edits")
        self._thread.start()

    def original_kept(self, path: str) -> None:
        """The journal keeps ``path``'s original: watch its folder (before the change)."""
        if os.getpid() != self._pid:
            return  # a forked child: the job's watcher finds its record in the log
        with self._lock:
            self._originals.add(path)
            self._watch(os.path.dirname(path))

    def folder_listed(self, folder: str) -> None:
        """The journal lists ``folder``'s names: a file someone else makes there is theirs."""
        if os.getpid() != self._pid:
            return
        with self._lock:
            self._listed.add(folder)
            self._watch(folder)

    def stop(self) -> None:
        """The job's code is done: take the notices already queued, then stop watching."""
        self._stop.set()
        os.write(self._wake_w, b"x")
        self._thread.join()
        self._drain()
        for fd in (self._fd, self._wake_r, self._wake_w):
            os.close(fd)

    def _watch(self, folder: str) -> None:
        if folder in self._watched:
            return
        self._watched.add(folder)
        wd = self._add_watch(self._fd, os.fsencode(folder), _IN_CLOSE_WRITE | _IN_MOVED_TO)
        if wd >= 0:
            self._folders[wd] = folder

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        while not self._stop.is_set():
            poller.poll(HEARTBEAT_S * 1000)
            self._drain()
            with self._lock:
                self._read_log()  # originals its children keep, in folders not watched yet
                now = time.time()
                for path, credits in list(self._credits.items()):
                    credits.expire(path, now)
                    if not credits.times and now - credits.last_native >= BURST_S:
                        del self._credits[path]
            with contextlib.suppress(OSError):
                os.utime(self.log.path)  # the heartbeat recovery reads

    def _drain(self) -> None:
        with self._lock:
            while True:
                try:
                    data = os.read(self._fd, 64 * 1024)
                except OSError:
                    return
                if not data:
                    return
                self._read_log()  # the announcements made before these writes
                for path in self._events(data):
                    self._attribute(path)

    def _events(self, data: bytes) -> list[str]:
        found, at = [], 0
        while at + _EVENT.size <= len(data):
            wd, mask, _cookie, size = _EVENT.unpack_from(data, at)
            name = data[at + _EVENT.size : at + _EVENT.size + size].rstrip(b"\0")
            at += _EVENT.size + size
            if mask & _IN_Q_OVERFLOW:
                self.overflowed = True
            folder = self._folders.get(wd)
            if folder is not None and name:
                found.append(os.path.join(folder, os.fsdecode(name)))
        return found

    def _attribute(self, path: str) -> None:
        """A notice of a write: the job's, or someone else's (an ``edited`` record)."""
        watched = path in self._originals or os.path.dirname(path) in self._listed
        if not watched or self.overflowed:
            return
        if self._credits.setdefault(path, Credits()).take(time.time()):
            return
        try:
            st = os.lstat(path)
        except OSError:
            return
        self.log.append({"kind": "edited", "path": path, **state(st)})

    def _read_log(self) -> None:
        """New ``wrote`` records (the job's and its children's) and originals kept."""
        try:
            with open(self.log.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return
        self._offset += len(data)
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            path = record.get("path")
            if record.get("kind") == "wrote":
                self._credits.setdefault(path, Credits()).announced(record)
            elif record.get("kind") == "file" and path not in self._originals:
                self._originals.add(path)  # a child's
                self._watch(os.path.dirname(path))


def start(log: JournalLog) -> EditWatcher | None:
    """A watcher for this job, where the system has inotify."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return EditWatcher(log)
    except OSError:
        return None


def state(st: os.stat_result) -> dict[str, int]:
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}


class Edits:
    """The person's edits the records name: for each path, its last ``edited`` record that no
    later ``wrote`` record overrides; after a kill (``log``: the dead job's log), also the
    time past which any change came once the job was dead."""

    def __init__(self, records: list[Record], log: Path | None) -> None:
        self.last: dict[str, Record | None] = {}
        for record in records:
            if record["kind"] == "edited":
                self.last[record["path"]] = record
            elif record["kind"] == "wrote" and record.get("path") in self.last:
                self.last[record["path"]] = None
        watched = any(r["kind"] == "watching" for r in records)
        self.until = alive_until(log) if log is not None and watched else None

    def persons(self, path: str) -> bool:
        """Whether ``path`` now holds someone else's version, saved after the job's last
        write and still in that state."""
        if self.until is None and self.last.get(path) is None:
            return False  # the common case, without a system call
        try:
            st = os.lstat(path)
        except OSError:
            return False
        edit = self.last.get(path)
        if edit is not None and all(edit.get(k) == v for k, v in state(st).items()):
            return True
        return self.until is not None and st.st_ctime_ns > self.until


def alive_until(log: Path) -> int | None:
    """A dead job's last moment, as far as its log's heartbeat says (ns); None: unknown."""
    try:
        return os.stat(log).st_mtime_ns + int(2 * HEARTBEAT_S * 1e9)
    except OSError:
        return None
