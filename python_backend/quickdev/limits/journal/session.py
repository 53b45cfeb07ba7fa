"""One job's file journal, from before the user's code runs to the restore at its end.

Where the job's process started with the interposer (``interposer``), every process of the
job asks the job's journal process (``service``) before it changes a file; otherwise this
process journals its own Python calls (``hook``), the native writers it knows
(``registry``, ``native``) and its Python children (``children``).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path

from quickdev.limits.journal import children, edits, hook, interposer, manifest, native, safety
from quickdev.limits.journal.claims import Claims
from quickdev.limits.journal.journal import Journal
from quickdev.limits.journal.process import JournalProcess
from quickdev.limits.journal.records import JournalLog, read_records
from quickdev.limits.journal.restore import Restored, restore
from quickdev.limits.journal.scope import Scope
from quickdev.limits.patching import Patcher
from quickdev.rundir.layout import JOURNAL_DONE, JOURNAL_FILE, MANIFEST_FILE
from quickdev.threads import is_own_thread

LATE_THREAD_GRACE_S = 5.0

log = logging.getLogger(__name__)


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
        scope = Scope(cwd, run_dir.parent)
        self.journal = Journal(run_dir, self.log, scope, self.claims)
        self.restored: Restored | None = None
        self.threads_before = {t.ident for t in threading.enumerate()}
        self.started = time.time()
        self.status = interposer.Status.now()
        # Every process of the job asks the journal process, which watches for the
        # person's edits too; or this process journals what it can see itself.
        self.service = JournalProcess(run_dir, scope) if self.status.interposed else None
        self.manifest = manifest.take(cwd, run_dir.parent)
        self.manifest.write(run_dir / MANIFEST_FILE)
        self.watcher = edits.start(self.log) if self.service is None else None
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
        self.journal.close({t.ident: t.name for t in late if t.ident is not None})
        if self.service is not None:
            try:
                self.service.close({t.native_id: t.name for t in late if t.native_id is not None})
            except OSError as exc:
                # Gone (a signal to the job's whole group): the interposer refuses every
                # change nobody answers, so nothing changes unkept; the restore goes on.
                log.warning("file journal: its process ended before the job (%s)", exc)
        if self.watcher is not None:
            self.watcher.stop()
        with self.claims.locked():
            records = read_records(self.run_dir / JOURNAL_FILE)
            done = restore(self.run_dir, records, self.claims, at_job_end=True)
        safety.check(done, self.manifest, records, self.run_dir, self.started)
        if done.safety is not None:
            done.safety.writers = self.status.writers
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
    # Bytecode the job's imports would write into the user's tree is not the job's output.
    patcher.set(sys, "dont_write_bytecode", True)
    native.install(patcher)
    children.install(patcher, run_dir)
    if session.service is not None:
        # The processes the job starts inherit the interposer (LD_PRELOAD) and find the
        # journal process by these. Here only the native writers that call the system
        # directly, past the C library (safetensors' Rust renames), are journaled in
        # this process, under the same lock: one original per path, whoever is first.
        patcher.set_environ(session.service.environment)
        session.journal.lists_folders = False
        hook.activate(session.journal, files=False, pause=interposer.pause)
    else:
        patcher.set(os, "open", hook.open_at(os.open))
        hook.activate(session.journal)
    patcher.on_undo(session.release)
    return session
