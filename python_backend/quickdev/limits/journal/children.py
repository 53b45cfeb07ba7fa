"""Python child processes of the job write into the same journal as the job.

A script that runs ``subprocess.run([sys.executable, "prep.py"])``, ``os.system("python
write.py")`` or a ``multiprocessing`` spawn/forkserver worker starts a fresh interpreter
that has no audit hook. The job puts ``child_site/`` first on ``PYTHONPATH`` and names
its run directory in ``QUICKDEV_JOURNAL``: every Python interpreter started under the job
imports that folder's ``sitecustomize`` at start-up, which calls ``join``: the child
appends its records to the job's log (``O_APPEND``, one whole line each) and the job
restores everything when it ends. A ``sitecustomize`` of the environment's own is still
run after ours. ``usercustomize`` would be simpler but is never imported in a virtual
environment, and a ``.pth`` file is only read from site-packages.

Fork children (``multiprocessing``'s default on Linux, ``os.fork``) inherit the active
hook and journal as they are and need nothing here.

Not covered: children that are not Python (a shell's ``cp``, ``tar``, a compiled tool),
a Python started with ``-S``, ``-I`` or ``-E`` (no ``sitecustomize``, or no
``PYTHONPATH``), a Python that cannot import this package (another version), and child
processes still running after the job ended.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from quickdev.limits.patching import Patcher

ENV = "QUICKDEV_JOURNAL"  # the run directory whose journal a child joins
PACKAGE_ENV = "QUICKDEV_JOURNAL_PACKAGE"  # where the child imports quickdev from
HOOK_DIR = Path(__file__).resolve().parent / "child_site"


def environment(run_dir: Path) -> dict[str, str]:
    """What the job's children inherit."""
    paths = [str(HOOK_DIR), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    if paths.count(str(HOOK_DIR)) > 1:
        paths.remove(str(HOOK_DIR))
    return {
        ENV: str(run_dir),
        PACKAGE_ENV: str(HOOK_DIR.parents[3]),
        "PYTHONPATH": os.pathsep.join(paths),
        # Bytecode a child's imports would write into the user's tree is not the job's.
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def install(patcher: Patcher, run_dir: Path) -> None:
    values = environment(run_dir)
    patcher.set_environ(values)


def join(run_dir: Path) -> None:
    """In a child interpreter: journal this process's changes into the job's log."""
    from quickdev.limits.journal import hook, native
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
    hook.activate(journal)
