"""Python child processes of the job write into the same journal as the job.

A script that runs ``subprocess.run([sys.executable, "prep.py"])``, ``os.system("python
write.py")`` or a ``multiprocessing`` spawn/forkserver worker starts a fresh interpreter
that has no audit hook. The job puts ``quickdev/child_site/`` first on ``PYTHONPATH``
and names its run directory in ``QUICKDEV_JOURNAL``: every Python interpreter started
under the job imports that folder's ``sitecustomize`` at start-up, which calls ``join``: the child
appends its records to the job's log (``O_APPEND``, one whole line each) and the job
restores everything when it ends. A ``sitecustomize`` of the environment's own is still
run after ours. ``usercustomize`` would be simpler but is never imported in a virtual
environment, and a ``.pth`` file is only read from site-packages.

Fork children (``multiprocessing``'s default on Linux, ``os.fork``) inherit the active
hook and journal as they are and need nothing here.

In an interposed job (``interposer``) every child, Python or not, asks the job's journal
process about its file calls itself; a Python child joins only for the native writers
that call the system past the C library, as the job does.

Not covered here: children that are not Python (a shell's ``cp``, ``tar``, a compiled tool),
a Python started with ``-S``, ``-I`` or ``-E`` (no ``sitecustomize``, or no
``PYTHONPATH``) and a Python that cannot import this package (another version). Child
processes do not outlive the job (``quickdev.job.children``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from quickdev.limits.patching import Patcher

ENV = "QUICKDEV_JOURNAL"  # the run directory whose journal a child joins
PACKAGE_ENV = "QUICKDEV_JOURNAL_PACKAGE"  # where the child imports quickdev from
# quickdev/child_site: above the packages it calls into (the journal, child jobs).
HOOK_DIR = Path(__file__).resolve().parents[2] / "child_site"


def site_environment() -> dict[str, str]:
    """What makes every Python the job starts import ``child_site``'s sitecustomize."""
    paths = [str(HOOK_DIR), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    if paths.count(str(HOOK_DIR)) > 1:
        paths.remove(str(HOOK_DIR))
    return {PACKAGE_ENV: str(HOOK_DIR.parents[1]), "PYTHONPATH": os.pathsep.join(paths)}


# Bytecode a child's imports would write into the user's tree is not the job's.
NO_BYTECODE = {"PYTHONDONTWRITEBYTECODE": "1"}


def environment(run_dir: Path) -> dict[str, str]:
    """What the job's children inherit."""
    return {ENV: str(run_dir), **site_environment(), **NO_BYTECODE}


def install(patcher: Patcher, run_dir: Path) -> None:
    values = environment(run_dir)
    patcher.set_environ(values)


def join(run_dir: Path) -> None:
    """In a child interpreter: journal this process's changes into the job's log."""
    from quickdev.limits.journal import hook, interposer, native
    from quickdev.limits.journal.claims import Claims
    from quickdev.limits.journal.journal import Journal
    from quickdev.limits.journal.records import JournalLog, read_records
    from quickdev.limits.journal.scope import Scope
    from quickdev.rundir.layout import JOURNAL_FILE

    log_path = run_dir / JOURNAL_FILE
    start = next((r for r in read_records(log_path) if r["kind"] == "start"), None)
    if start is None:
        return  # the job has ended: nothing to join
    log = JournalLog(log_path, own=False)
    journal = Journal(run_dir, log, Scope(Path(start["cwd"]), run_dir.parent), Claims(run_dir))
    native.install(Patcher())  # undone with the process
    sys.dont_write_bytecode = True
    if interposer.SOCKET_ENV in os.environ and interposer.loaded():
        # Its file calls are asked of the job's journal process; here only the native
        # writers that bypass the C library, as in the job.
        journal.lists_folders = False
        hook.activate(journal, files=False, pause=interposer.pause)
    else:
        hook.activate(journal)
