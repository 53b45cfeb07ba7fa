"""The file journal: a quick-dev job leaves the user's files exactly as it found them.

While a job runs, every file it creates, changes, renames or deletes outside its run
directory is journaled; when the job ends, however it ends, the tree is put back and
the job's versions are kept in ``RUN_DIR/outputs`` (listed in result.json ``outputs``).

Back up first, not redirect. An audit hook (``hook``) sees each operation before it
happens but cannot change its arguments, so redirecting would mean replacing every
function that takes a path, and would still miss readers in native code (torch's
C++ reader, safetensors' mmap) and anything the job hands a path to. Backing up
first lets every write land where the script asked: the job reads its own writes by
construction, native readers included. The cost is that the user's tree holds the
job's versions while it runs, so the journal is durable: its log (``records``)
reaches the disk before each change, and the next quickdev command or language
server finishes the restore of a job that was killed (``recover``).

The backup of a file that is replaced (``open(p, "w")``, ``torch.save(p)``, an
atomic ``os.replace``) or removed is a rename or a hard link: a multi-GB checkpoint
costs no copy. Only a file opened to change in place (``"a"``, ``"r+"``) is copied,
as a reflink where the file system can clone (``backup``).

Modules: ``scope`` (which paths count), ``records`` (the log), ``backup`` (putting
originals aside), ``journal`` (first touch of each path), ``claims`` (two jobs, one
folder), ``hook`` (the audit hook), ``registry`` and ``native`` (libraries that write
from native code), ``edits`` (the person's own edits win), ``manifest`` (the safety
net: changes no journal saw are named), ``restore`` (putting it back), ``recover``
(after a kill), ``loggers`` (logger stores pointed into the run directory),
``children`` (Python child processes), ``safety`` (what result.json says of it all).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from quickdev.limits.journal import children, edits, hook, manifest, native, safety
from quickdev.limits.journal.claims import Claims
from quickdev.limits.journal.journal import Journal
from quickdev.limits.journal.records import JournalLog, read_records
from quickdev.limits.journal.restore import Restored, restore
from quickdev.limits.journal.scope import Scope
from quickdev.limits.patching import Patcher
from quickdev.rundir.layout import JOURNAL_DONE, JOURNAL_FILE, MANIFEST_FILE
from quickdev.threads import is_own_thread

LATE_THREAD_GRACE_S = 5.0


class JournalSession:
    """One job's journal, from before the user's code runs to the restore at its end."""

    def __init__(self, run_dir: Path, cwd: Path) -> None:
        self.run_dir = run_dir
        self.pid = os.getpid()
        self.log = JournalLog(run_dir / JOURNAL_FILE)
        self.log.append(
            {"kind": "start", "pid": os.getpid(), "cwd": str(cwd), "run_dir": str(run_dir)}
        )
        self.claims = Claims(run_dir)
        self.journal = Journal(run_dir, self.log, Scope(cwd, run_dir.parent), self.claims)
        self.restored: Restored | None = None
        self.threads_before = {t.ident for t in threading.enumerate()}
        self.started = time.time()
        self.manifest = manifest.take(cwd, run_dir.parent)
        self.manifest.write(run_dir / MANIFEST_FILE)
        self.watcher = edits.start(self.log)
        if self.watcher is not None:
            self.journal.original_kept = self.watcher.original_kept
            self.journal.folder_listed = self.watcher.folder_listed

    def finish(self) -> Restored:
        """Put the tree back; once (a kill during the restore must not start a second)."""
        if os.getpid() != self.pid:
            return Restored()  # a forked child that returned: the job restores, not it
        if self.restored is not None:
            return self.restored
        self.restored = Restored()
        late = self._wait_for_threads()
        self.journal.close({t.ident for t in late if t.ident is not None})
        if self.watcher is not None:
            self.watcher.stop()
        with self.claims.locked():
            records = read_records(self.run_dir / JOURNAL_FILE)
            done = restore(self.run_dir, records, self.claims, at_job_end=True)
        safety.check(done, self.manifest, records, self.run_dir, self.started)
        self.restored = done
        if not done.problems:
            self.log.finish(self.run_dir / JOURNAL_DONE)
        else:
            self.log.close()  # left for recovery to try again
        return done

    def _wait_for_threads(self) -> list[threading.Thread]:
        """Threads the job started that still run. A non-daemon one (Python waits for it
        at exit) gets a grace period to finish its writes before the restore."""
        deadline = time.monotonic() + LATE_THREAD_GRACE_S
        late = []
        for thread in threading.enumerate():
            if thread.ident in self.threads_before or thread is threading.current_thread():
                continue
            if is_own_thread(thread):  # the sampler stops after the restore, by design
                continue
            if not thread.daemon:
                thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                late.append(thread)
        return late

    def release(self) -> None:
        """Patches undone: the hook stops, unless it must go on refusing late threads."""
        if not self.journal.refused:
            hook.activate(None)


def install(patcher: Patcher, run_dir: Path) -> JournalSession:
    session = JournalSession(run_dir, Path.cwd())
    native.install(patcher)
    children.install(patcher, run_dir)
    # Bytecode the job's imports would write into the user's tree is not the job's output.
    patcher.set(sys, "dont_write_bytecode", True)
    patcher.set(os, "open", hook.open_at(os.open))
    hook.activate(session.journal)
    patcher.on_undo(session.release)
    return session
