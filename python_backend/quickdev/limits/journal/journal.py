"""The first change to each path: what was there is recorded (and put aside) before it happens.

Only the first touch of a path matters: from then on the job owns it until the end,
when ``restore`` puts the original back. The record reaches the disk before the
original is moved, and the original is moved before the job's change happens.

One owner per original. The processes that journal into one log (a job's Python
children, forked workers) and the jobs of one runs root decide who keeps an original
under one lock (``claims``): a process first reads what the others recorded since it
last looked (``_catch_up``), and only then records and puts aside. A later change that
would destroy an original kept without a copy (the first bytes of a file appended to,
a hard link to a file about to change in place) makes that original a copy first,
in whichever job's log keeps it (``_protect``).

A change through a symbolic link lands in its target: the target is what is kept,
wherever it is, when the link is in the user's tree. The folder a name is added to
or removed from keeps its mode and times (``folder`` records).

A change whose original cannot be kept (a full disk, a file that cannot be read) is
refused to the script as the system would refuse it: an ``OSError`` with the errno
of the failure, naming the file, and the file is left as it was.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from quickdev.limits.journal import backup
from quickdev.limits.journal.claims import Claims
from quickdev.limits.journal.guards import LogTail, first_guard, learn, may_destroy
from quickdev.limits.journal.records import JournalLog, Record, append_to, writer_alive
from quickdev.limits.journal.refusals import JournalRefused, LateChangeRefused, cannot_keep
from quickdev.limits.journal.scope import Scope
from quickdev.rundir.layout import BACKUPS_DIR, JOURNAL_FILE

# A folder with more names than this (a data set's) is not listed: too costly to record,
# and a job adding a file to it natively is left undetected.
MAX_LISTING = 10_000


class Journal:
    def __init__(self, run_dir: Path, log: JournalLog, scope: Scope, claims: Claims) -> None:
        self.run_dir = run_dir
        self.backups = run_dir / BACKUPS_DIR
        self.log = log
        self.scope = scope
        self.claims = claims
        # Each path seen: the record that keeps its original (this process's, or another
        # process's of this job, read from the log), or the other job's that does.
        self._guards: dict[str, Record] = {}
        # Inodes a hard-link backup shares with a live path (whatever its name now):
        # changing one in place would change the backup too, so it becomes a copy first.
        self._linked: dict[tuple[int, int], Record] = {}
        self._tail = LogTail(log.path)  # what the log says that this process has not read
        self._lock = threading.RLock()
        self._count = 0
        self._listed: set[str] = set()
        self._folders: set[str] = set()
        # Called with each path whose original is kept, before the change (``edits``).
        self.original_kept: Callable[[str], None] = lambda path: None
        self.folder_listed: Callable[[str], None] = lambda folder: None
        # Names in the folders the job opens files in are recorded (``saw``) where native
        # writers are not seen otherwise; the interposer (``service``) sees them.
        self.lists_folders = True
        # The process and thread making the change: this one's, or in the journal process
        # the asking one's (``service``).
        self.actor: tuple[int, int] | None = None
        self.refused: dict[int, str] | None = None  # thread id -> name, once the job ended
        self._refusals: set[str] = set()

    # What the job is about to do, one method per kind of change. A change that writes
    # ``path`` is announced first (``wrote``), so that a write the journal did not announce
    # is known to be someone else's (``edits``).
    def before_write(self, path: str, *, truncate: bool, append: bool = False) -> None:
        action = "replace" if truncate else "append" if append else "update"
        target, linked = self._followed(path)
        self._touch(target, action, wrote=True, linked=linked)

    def before_update(self, path: str, *, follow: bool = True) -> None:
        target, linked = self._followed(path) if follow else (path, False)
        self._touch(target, "update", wrote=True, linked=linked)

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
        target, linked = self._followed(path) if action != "create" else (path, False)
        self._touch(target, touch[action], wrote=True, native=True, linked=linked)

    def before_rmtree(self, path: str) -> None:
        self._touch(path, "keep", tree=True)

    def saw(self, path: str) -> None:
        """The job opened ``path``: its folder's names are recorded once, so that a file a
        native writer (C's ``fopen``) adds there is known to be the job's; one that someone
        else makes there meanwhile is theirs (``edits`` watches the folder from now on)."""
        folder = os.path.dirname(path)
        if not self.lists_folders or folder in self._listed or not self.scope.keeps(path):
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

    def close(self, refused: dict[int, str]) -> None:
        """The tree is restored: from now on the threads ``refused`` (id -> name: still
        running after the job ended) may change nothing the journal keeps, and others are
        not journaled."""
        self.refused = refused

    def _refuse(self, path: str, name: str) -> None:
        """A thread still running after the job ended tries to change ``path``: refused, and
        said once on stderr, since a library's thread may swallow the error. A thread that
        changes nothing (tqdm's monitor, a logger's writer) is never named."""
        message = (
            f"quickdev: the job has ended and {path} is restored; thread {name!r} may not change it"
        )
        if message not in self._refusals:
            self._refusals.add(message)
            stderr = sys.__stderr__ or sys.stderr
            stderr.write(message + "\n")
            stderr.flush()
        raise LateChangeRefused(errno.EPERM, message)

    def _followed(self, path: str) -> tuple[str, bool]:
        """Where a change that follows links lands: ``path``, or the target of the link at
        ``path`` and whether the link is in the user's tree (its target is then kept,
        wherever it is)."""
        try:
            if not stat.S_ISLNK(os.lstat(path).st_mode):
                return path, False
        except OSError:
            return path, False
        return os.path.realpath(path), self.scope.keeps(path)

    def _touch(
        self, path: str, action: str, *, tree: bool = False, wrote: bool = False,
        native: bool = False, linked: bool = False,
    ) -> None:  # fmt: skip
        if not (self.scope.keeps(path) or (linked and self.scope.reachable(path))):
            return
        if self.refused is not None:
            thread = self.actor[1] if self.actor else threading.get_ident()
            if thread in self.refused:
                self._refuse(path, self.refused[thread])
            return
        try:
            self.saw(path)
            self._note_folder(os.path.dirname(path))
            self._first_touch(path, action, tree)
            if wrote:  # after the original's record (the watcher needs it first), before
                pid = self.actor[0] if self.actor else os.getpid()
                self._append(
                    {"kind": "wrote", "path": path, "t": time.time(), "pid": pid,
                     "native": native}
                )  # fmt: skip
        except JournalRefused:
            raise
        except OSError as exc:  # the run's journal could not be written (a full disk)
            raise JournalRefused(
                exc.errno or errno.EIO,
                f"quickdev: cannot record the change of {path} in the run's journal "
                f"({exc.strerror or exc}); the file was left as it was",
            ) from None

    def _first_touch(self, path: str, action: str, tree: bool) -> None:
        with self._lock:
            guard = self._guards.get(path)
            if (
                guard is not None
                and not may_destroy(guard, action)
                and not self._shares(path, action)
            ):
                return
            with self.claims.locked():
                self._catch_up()
                self._keep_original(path, action, tree)

    # Everything below runs under the claims lock.
    def _keep_original(self, path: str, action: str, tree: bool) -> None:
        guard = self._guards.get(path)
        if guard is None:
            self._record_original(path, action, tree)
        elif guard["kind"] == "shared":
            self._protect_theirs(path, guard, action)
        else:
            self._protect(path, guard, action, self.log.path)
        if action != "keep":
            linked = self._linked_to(path)
            if linked is not None:
                self._unshare(path, linked)

    def _record_original(self, path: str, action: str, tree: bool) -> None:
        st = _lstat(path)
        if st is not None and stat.S_ISDIR(st.st_mode):
            self._record_dir(path, st, tree)
            return
        owner = self.claims.owner_of(path)
        if owner is not None:
            guard = {"kind": "shared", "path": path, "owner": owner}
            self._append(guard)
            self._guards[path] = guard
            self._protect_theirs(path, guard, action)
        elif st is None:
            record = {"kind": "absent", "path": path}
            self._append(record)
            self._guards[path] = record
        else:
            self._put_aside(path, st, action)

    def _record_dir(self, path: str, st: os.stat_result, tree: bool) -> None:
        record = {"kind": "dir", "path": path, "t": time.time(), **backup.folder_state(st)}
        self._append(record)
        self._guards[path] = record
        if not tree:
            return
        # A folder that is removed or moved as a whole: every file in it is linked aside
        # (no copy), so the job's rmtree or rename proceeds on the originals' other names.
        for root, dirs, files in os.walk(path):
            for name in [*dirs, *files]:
                inside = os.path.join(root, name)
                if inside not in self._guards:
                    self._record_original(inside, "keep", False)

    def _note_folder(self, folder: str) -> None:
        """The folder of a path about to change: its mode and times, once per process; from
        now on a name someone else makes there is theirs, and so are the folder's times
        (``edits`` watches it)."""
        if folder in self._folders or not self.scope.keeps(folder):
            return
        st = _lstat(folder)
        self._folders.add(folder)
        self.folder_listed(folder)
        if st is not None and stat.S_ISDIR(st.st_mode):
            self._append({"kind": "folder", "path": folder, "t": time.time(),
                          **backup.folder_state(st)})  # fmt: skip

    def _backup_name(self, path: str, run_dir: Path | None = None) -> Path:
        self._count += 1
        # The pid keeps apart the backups of the job and of its children, which journal
        # into the same run directory (forked children also inherit the count).
        backups = (run_dir or self.run_dir) / BACKUPS_DIR
        return backups / f"{os.getpid()}-{self._count}-{os.path.basename(path)}"

    def _put_aside(self, path: str, st: os.stat_result, action: str) -> None:
        if action == "append" and stat.S_ISREG(st.st_mode):
            # Writes with O_APPEND only ever land past the end: the original is the first
            # ``length`` bytes of this inode, and nothing is copied (a 1 GiB log costs
            # one record).
            record = {"kind": "file", "path": path, "how": "append", **backup.identity(st)}
            self._append(record)
            self._guards[path] = record
            self.original_kept(path)
            return
        aside = self._backup_name(path)
        how = {"replace": "rename", "keep": "link", "update": "copy", "append": "copy"}[action]
        record = {"kind": "file", "path": path, "backup": str(aside), "how": how}
        if how == "link":
            record.update(dev=st.st_dev, ino=st.st_ino)
        self._append(record)
        self.original_kept(path)
        try:
            self.backups.mkdir(exist_ok=True)
            if action == "replace":
                how = backup.rename_aside(path, aside)
                if how == "rename" and not stat.S_ISLNK(st.st_mode):
                    backup.recreate_empty(path, st)
            elif action == "keep":
                how = backup.link_aside(path, aside)
            else:
                how = backup.copy_aside(path, aside)
        except OSError as exc:
            raise cannot_keep(path, exc) from None
        guard = {**record, "how": how}
        self._guards[path] = guard
        if how == "link":
            self._linked[(st.st_dev, st.st_ino)] = guard

    def _protect(self, path: str, guard: Record, action: str, log: Path) -> None:
        """The original ``guard`` keeps (in the log ``log``) survives ``action``."""
        if guard.get("how") == "append" and action != "append":
            self._promote(path, guard, log)
        elif guard.get("how") == "link" and action != "keep" and _same_file(path, guard["backup"]):
            self._unshare(path, guard)

    def _protect_theirs(self, path: str, guard: Record, action: str) -> None:
        """Another running job keeps ``path``'s original: it must survive this job's
        change too (a copy of what that job kept without one, made in its run directory)."""
        log = Path(guard["owner"]) / JOURNAL_FILE
        if not writer_alive(log):
            return  # it has ended: it handed the original over (to this job or another)
        original = first_guard(log, path)
        if original is not None and original["kind"] == "file":
            self._protect(path, original, action, log)
            guard["original"] = original

    def _promote(self, path: str, guard: Record, log: Path) -> None:
        """A file appended to is about to change otherwise (truncated, replaced, removed,
        changed in place): its original bytes, still the first ``length`` bytes, are
        copied aside now, the one time an append costs a copy."""
        if not backup.same_inode(path, guard):
            return
        aside = self._backup_name(path, log.parent)
        record = {"kind": "file", "path": path, "backup": str(aside), "how": "copy",
                  "promotes": True}  # fmt: skip
        if log == self.log.path:
            self._append(record)
        else:
            append_to(log, record)
        try:
            backup.copy_prefix(path, aside, guard)
        except OSError as exc:
            raise cannot_keep(path, exc) from None
        guard.clear()
        guard.update(record)

    def _shares(self, path: str, action: str) -> bool:
        """Whether ``action`` changes in place an inode a hard-link backup shares."""
        return bool(self._linked) and action != "keep" and self._linked_to(path) is not None

    def _linked_to(self, path: str) -> Record | None:
        """The guard whose hard-link backup shares ``path``'s inode, if any."""
        st = _lstat(path)
        return None if st is None else self._linked.get((st.st_dev, st.st_ino))

    def _unshare(self, path: str, guard: Record) -> None:
        """A hard-link backup shares its inode with ``path``, about to change: the backup
        becomes a copy of its own first."""
        aside = guard["backup"]
        self._linked.pop((guard.get("dev", -1), guard.get("ino", -1)), None)
        if not _same_file(path, aside):
            return
        fresh = aside + ".own"
        try:
            backup.copy_aside(aside, Path(fresh))
            os.replace(fresh, aside)
        except OSError as exc:
            raise cannot_keep(path, exc) from None
        guard["how"] = "copy"

    def _catch_up(self) -> None:
        """What the other processes journaling into this log recorded since this one last
        looked (their guards), so that a path has one original whoever saw it first."""
        for record in self._tail.new_records():
            if learn(self._guards, record) and record.get("how") == "link" and "ino" in record:
                self._linked[(record["dev"], record["ino"])] = record

    def _append(self, record: Record) -> None:
        self.log.append(record)


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _same_file(path: str, other: str) -> bool:
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False
