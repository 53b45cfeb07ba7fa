"""The first change to each path: what was there is recorded (and put aside) before it happens.

Only the first touch of a path matters: from then on the job owns it until the end,
when ``restore`` puts the original back. The record reaches the disk before the
original is moved, and the original is moved before the job's change happens.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from quickdev.limits.journal import backup
from quickdev.limits.journal.claims import Claims
from quickdev.limits.journal.records import JournalLog, Record
from quickdev.limits.journal.scope import Scope
from quickdev.rundir.layout import BACKUPS_DIR

# A folder with more names than this (a data set's) is not listed: too costly to record,
# and a job adding a file to it natively is left undetected.
MAX_LISTING = 10_000


class JournalRefused(PermissionError):
    """The original could not be put aside, so the change is refused (one line)."""


class Journal:
    def __init__(self, run_dir: Path, log: JournalLog, scope: Scope, claims: Claims) -> None:
        self.run_dir = run_dir
        self.backups = run_dir / BACKUPS_DIR
        self.log = log
        self.scope = scope
        self.claims = claims
        self._seen: set[str] = set()
        # Inodes a hard-link backup shares with a live path: changing one in place
        # would change the backup too, so such a backup becomes a copy first.
        self._linked: dict[tuple[int, int], Path] = {}
        self._lock = threading.RLock()
        self._count = 0
        self._listed: set[str] = set()
        self._appended: dict[str, Record] = {}  # path -> its ``append`` record
        # Called with each path whose original is kept, before the change (``edits``).
        self.original_kept: Callable[[str], None] = lambda path: None
        self.folder_listed: Callable[[str], None] = lambda folder: None
        self.refused: set[int] | None = None
        self._refusals: set[str] = set()

    # What the job is about to do, one method per kind of change. A change that writes
    # ``path`` is announced first (``wrote``), so that a write the journal did not announce
    # is known to be someone else's (``edits``).
    def before_write(self, path: str, *, truncate: bool, append: bool = False) -> None:
        action = "replace" if truncate else "append" if append else "update"
        self._touch(path, action, wrote=True)

    def before_update(self, path: str) -> None:
        self._touch(path, "update", wrote=True)

    def before_remove(self, path: str) -> None:
        self._touch(path, "keep")

    def before_rename(self, src: str, dst: str) -> None:
        self._touch(src, "keep", tree=True)
        self._touch(dst, "keep", wrote=True)

    def before_create(self, path: str) -> None:
        self._touch(path, "keep", wrote=True)

    def before_native(self, path: str, action: str) -> None:
        """A native library (``registry``) is about to ``replace``, ``update``, ``append`` to
        or ``create`` ``path``; it may open and close it more than once (``edits.BURST_S``)."""
        touch = {"replace": "replace", "update": "update", "append": "append", "create": "keep"}
        self._touch(path, touch[action], wrote=True, native=True)

    def before_rmtree(self, path: str) -> None:
        self._touch(path, "keep", tree=True)

    def saw(self, path: str) -> None:
        """The job opened ``path``: its folder's names are recorded once, so that a file a
        native writer (C's ``fopen``) adds there is known to be the job's; one that someone
        else makes there meanwhile is theirs (``edits`` watches the folder from now on)."""
        folder = os.path.dirname(path)
        if folder in self._listed or not self.scope.keeps(path):
            return
        with self._lock:
            if folder in self._listed:
                return
            self._listed.add(folder)
            self.folder_listed(folder)
            try:
                names = os.listdir(folder)
            except OSError:
                return
            if len(names) <= MAX_LISTING:
                self._append({"kind": "listing", "path": folder, "names": names})

    def close(self, refused: set[int]) -> None:
        """The tree is restored: from now on the threads ``refused`` (still running after
        the job ended) may change nothing the journal keeps, and others are not journaled."""
        self.refused = refused

    def _refuse(self, path: str) -> None:
        """A thread still running after the job ended tries to change ``path``: refused, and
        said once on stderr, since a library's thread may swallow the error. A thread that
        changes nothing (tqdm's monitor, a logger's writer) is never named."""
        message = (
            f"quickdev: the job has ended and {path} is restored; "
            f"thread {threading.current_thread().name!r} may not change it"
        )
        if message not in self._refusals:
            self._refusals.add(message)
            stderr = sys.__stderr__ or sys.stderr
            stderr.write(message + "\n")
            stderr.flush()
        raise JournalRefused(message)

    def _touch(
        self, path: str, action: str, *, tree: bool = False, wrote: bool = False,
        native: bool = False,
    ) -> None:  # fmt: skip
        if not self.scope.keeps(path):
            return
        if self.refused is not None:
            if threading.get_ident() in self.refused:
                self._refuse(path)
            return
        self.saw(path)
        self._first_touch(path, action, tree)
        if wrote:  # after the original's record (the watcher needs it first), before the write
            self._append(
                {"kind": "wrote", "path": path, "t": time.time(), "pid": os.getpid(),
                 "native": native}
            )  # fmt: skip

    def _first_touch(self, path: str, action: str, tree: bool) -> None:
        with self._lock:
            if path in self._seen:
                if path in self._appended and action != "append":
                    self._promote(path)
                elif action in ("update", "append"):
                    self._unshare(path)
                return
            st = _lstat(path)
            if st is not None and stat.S_ISDIR(st.st_mode):
                self._record_dir(path, tree)
                return
            owner = self.claims.owner_of(path)
            if owner is not None:
                self._append({"kind": "shared", "path": path, "owner": owner})
            elif st is None:
                self._append({"kind": "absent", "path": path})
            else:
                self._put_aside(path, st, action)
            self._seen.add(path)

    def _record_dir(self, path: str, tree: bool) -> None:
        self._append({"kind": "dir", "path": path})
        self._seen.add(path)
        if not tree:
            return
        # A folder that is removed or moved as a whole: every file in it is linked aside
        # (no copy), so the job's rmtree or rename proceeds on the originals' other names.
        for root, dirs, files in os.walk(path):
            for name in dirs:
                self._touch(os.path.join(root, name), "keep")
            for name in files:
                self._touch(os.path.join(root, name), "keep")

    def _backup_name(self, path: str) -> Path:
        self._count += 1
        # The pid keeps apart the backups of the job and of its children, which journal
        # into the same run directory (forked children also inherit the count).
        return self.backups / f"{os.getpid()}-{self._count}-{os.path.basename(path)}"

    def _put_aside(self, path: str, st: os.stat_result, action: str) -> None:
        if action == "append" and stat.S_ISREG(st.st_mode):
            # Writes with O_APPEND only ever land past the end: the original is the first
            # ``length`` bytes of this inode, and nothing is copied (a 1 GiB log costs
            # one record).
            record = {"kind": "file", "path": path, "how": "append", **backup.identity(st)}
            self._append(record)
            self._appended[path] = record
            self.original_kept(path)
            return
        aside = self._backup_name(path)
        how = {"replace": "rename", "keep": "link", "update": "copy", "append": "copy"}[action]
        self._append({"kind": "file", "path": path, "backup": str(aside), "how": how})
        self.original_kept(path)
        try:
            self.backups.mkdir(exist_ok=True)
            if action == "replace":
                how = backup.rename_aside(path, aside)
                if how == "rename" and not stat.S_ISLNK(st.st_mode):
                    _recreate_empty(path, st)
            elif action == "keep":
                how = backup.link_aside(path, aside)
            else:
                how = backup.copy_aside(path, aside)
        except OSError as exc:
            raise JournalRefused(
                f"quickdev: cannot keep a copy of {path} before the job changes it "
                f"({exc.strerror or exc}); the file was left as it was"
            ) from None
        if how == "link":
            self._linked[(st.st_dev, st.st_ino)] = aside

    def _promote(self, path: str) -> None:
        """A file the job appended to is about to change otherwise (truncated, replaced,
        removed, changed in place): its original bytes, still the first ``length`` bytes,
        are copied aside now, the one time an append costs a copy."""
        record = self._appended.pop(path)
        aside = self._backup_name(path)
        self._append({"kind": "file", "path": path, "backup": str(aside), "how": "copy",
                      "promotes": True})  # fmt: skip
        try:
            self.backups.mkdir(exist_ok=True)
            backup.copy_prefix(path, aside, record)
        except OSError as exc:
            raise JournalRefused(
                f"quickdev: cannot keep a copy of {path} before the job changes it "
                f"({exc.strerror or exc}); the file was left as it was"
            ) from None

    def _unshare(self, path: str) -> None:
        st = _lstat(path)
        if st is None:
            return
        aside = self._linked.pop((st.st_dev, st.st_ino), None)
        if aside is not None:
            fresh = aside.with_name(aside.name + ".own")
            backup.copy_aside(str(aside), fresh)
            os.replace(fresh, aside)

    def _append(self, record: Record) -> None:
        self.log.append(record)


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _recreate_empty(path: str, st: os.stat_result) -> None:
    """After a rename aside the path is empty, as a truncating open would leave it anyway;
    an open without O_CREAT (``os.open(p, O_WRONLY | O_TRUNC)``) still finds a file."""
    # mknod, not open: no file is opened to write, so no notice of a write (``edits``).
    try:
        os.mknod(path, stat.S_IFREG | stat.S_IMODE(st.st_mode))
    except PermissionError:  # systems where only root makes regular files so
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IMODE(st.st_mode)))
