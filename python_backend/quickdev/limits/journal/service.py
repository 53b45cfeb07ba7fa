"""The job's journal process: the one keeper of a job's originals when every process of the job
is interposed (``interpose.c``).

Each process of the job (the job itself, its native libraries, its children: Python or
not) asks here, over a Unix socket, before a change of a file in the journal's scope,
and waits for the answer: 0, the original is kept and the change may go on; an errno,
the change fails with it. One ``Journal`` serves them all, so each path has one original
whichever process changes it first, and the person's edits are told from the job's by
one watcher (``edits``), which sees every write announced.

A process of its own, not a thread of the job's: a native library calls ``open`` holding
Python's lock, which a thread of the job's interpreter would need to answer. Started by
the job (``process``: forked at the job's start, or a new ``python -I -S``), it reads its
settings from the control socket, serves until the job closes the journal (``close``: the
watcher stops; from then on only the threads still running are refused) and ends when the
job process ends (the control socket reaches its end), however it ends.
"""

from __future__ import annotations

import errno
import json
import os
import selectors
import signal
import socket
import struct
import sys
from pathlib import Path

from quickdev.limits.journal import edits
from quickdev.limits.journal.claims import Claims
from quickdev.limits.journal.journal import Journal
from quickdev.limits.journal.records import JournalLog
from quickdev.limits.journal.refusals import JournalRefused
from quickdev.limits.journal.scope import Scope
from quickdev.rundir.layout import JOURNAL_FILE

# A request: its length, what it asks (interpose.c's OP_*), flags, pid, thread id, and the
# lengths of its one or two paths, which follow. The answer: an errno, 0 to go on.
HEADER = struct.Struct("<7i")
ANSWER = struct.Struct("<i")
OPEN, RENAME, UNLINK, RMDIR, MKDIR, LINK, TRUNCATE, META, EXCHANGE = range(1, 10)
META_NOFOLLOW = 1
_O_TMPFILE = getattr(os, "O_TMPFILE", 0o20200000)


def answer(journal: Journal, op: int, flags: int, first: str, second: str) -> int:
    """What the journal says of one change: 0, or the errno it is refused with."""
    if op == OPEN:
        if flags & _O_TMPFILE == _O_TMPFILE:
            return 0  # no name yet: a link gives it one (LINK)
        if flags & os.O_EXCL and flags & os.O_CREAT and os.path.lexists(first):
            return 0  # the open fails by itself and changes nothing
        journal.before_write(first, truncate=bool(flags & os.O_TRUNC),
                             append=bool(flags & os.O_APPEND))  # fmt: skip
    elif op == RENAME:
        journal.before_rename(first, second)
    elif op == EXCHANGE:
        journal.before_rename(first, second)
        journal.before_rename(second, first)
    elif op in (UNLINK, RMDIR):
        journal.before_remove(first)
    elif op in (MKDIR, LINK):
        journal.before_create(first)
    elif op == TRUNCATE:
        journal.before_write(first, truncate=False)
    elif op == META:
        journal.before_update(first, follow=not flags & META_NOFOLLOW)
    return 0


class Server:
    def __init__(self, journal: Journal, listener: socket.socket, control: socket.socket) -> None:
        self.journal = journal
        self.listener = listener
        self.control = control
        self.watcher = edits.start(journal.log)
        if self.watcher is not None:
            journal.original_kept = self.watcher.original_kept
            journal.folder_listed = self.watcher.folder_listed
        self.selector = selectors.DefaultSelector()
        self.selector.register(listener, selectors.EVENT_READ)
        self.selector.register(control, selectors.EVENT_READ)
        self.buffers: dict[socket.socket, bytes] = {}
        self.control_text = b""
        self.uid = os.getuid()
        self.said: set[str] = set()

    def serve(self) -> None:
        self._heard()
        while True:
            for key, _ in self.selector.select():
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self.listener:
                    self._accept()
                elif sock is self.control:
                    if not self._control():
                        return  # the job process has ended
                else:
                    self._read(sock)

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        if uid != self.uid and self.uid != 0:
            conn.close()  # not this user's process
            return
        self.buffers[conn] = b""
        self.selector.register(conn, selectors.EVENT_READ)

    def _read(self, conn: socket.socket) -> None:
        try:
            data = conn.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            self.selector.unregister(conn)
            del self.buffers[conn]
            conn.close()
            return
        buffer = self.buffers[conn] + data
        while len(buffer) >= HEADER.size:
            size, op, flags, pid, tid, len1, len2 = HEADER.unpack_from(buffer)
            if len(buffer) < size:
                break
            start = HEADER.size
            first = os.fsdecode(buffer[start : start + len1])
            second = os.fsdecode(buffer[start + len1 : start + len1 + len2])
            buffer = buffer[size:]
            code = self._answer(op, flags, pid, tid, first, second)
            try:
                conn.sendall(ANSWER.pack(code))
            except OSError:
                break
        self.buffers[conn] = buffer

    def _answer(self, op: int, flags: int, pid: int, tid: int, first: str, second: str) -> int:
        self.journal.actor = (pid, tid)
        try:
            return answer(self.journal, op, flags, first, second)
        except JournalRefused as refused:
            # The process sees only the errno, as the system would give it: why, once a
            # message, on the job's stderr (a late thread's refusal is said already).
            if refused.errno != errno.EPERM and str(refused) not in self.said:
                self.said.add(str(refused))
                _say(str(refused))
            return refused.errno or errno.EIO
        except Exception as exc:  # a fault of the journal's own: the change is not made bare
            _say(
                f"quickdev: the file journal could not keep the original of {first} "
                f"({type(exc).__name__}: {exc}); the change was refused"
            )
            return errno.EIO
        finally:
            self.journal.actor = None

    def _control(self) -> bool:
        try:
            data = self.control.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            return False
        self.control_text += data
        self._heard()
        return True

    def _heard(self) -> None:
        """The job's whole messages so far: ``close`` is the one there is."""
        while b"\n" in self.control_text:
            line, _, self.control_text = self.control_text.partition(b"\n")
            message = json.loads(line)
            if "close" in message:
                if self.watcher is not None:
                    self.watcher.stop()
                    self.watcher = None
                self.journal.close({int(tid): name for tid, name in message["close"].items()})
                self.control.sendall(b"closed\n")


def _say(line: str) -> None:
    stderr = sys.__stderr__ or sys.stderr
    stderr.write(line + "\n")
    stderr.flush()


def main(listen_fd: int, control_fd: int) -> None:
    """The journal process started as a new interpreter (``process``)."""
    serve(socket.socket(fileno=listen_fd), socket.socket(fileno=control_fd))


def serve(listener: socket.socket, control: socket.socket) -> None:
    """Serve the job until it closes ``control``: its settings first, then the requests."""
    # A terminal's Ctrl+C and the editor's Stop (SIGTERM) reach every process in the job's
    # group: the job ends its script (which may save on its way out) and puts the files
    # back, and its processes may change files until then. This process ends when the
    # job's end of ``control`` closes, however the job ends (SIGKILL of the group included).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    settings = b""
    while b"\n" not in settings:
        data = control.recv(1 << 16)
        if not data:
            return
        settings += data
    line, _, rest = settings.partition(b"\n")
    config = json.loads(line)
    run_dir = Path(config["run_dir"])
    log = JournalLog(run_dir / JOURNAL_FILE, own=False)
    journal = Journal(run_dir, log, Scope.from_text(config["scope"]), Claims(run_dir))
    journal.lists_folders = False
    server = Server(journal, listener, control)
    server.control_text = rest  # the job may have said more already (a job that ended fast)
    server.serve()
