"""At the start of every Python the job starts (``child_site``): tie it to its parent's
life and, in a multiprocessing worker, put the job's limits in place.

A spawn worker (``python -c "from multiprocessing.spawn import spawn_main; …"``) or a
forkserver (whose forks become the workers) is a fresh interpreter: the limits are
installed here, before it imports the script's main module, from the job's options, and
that module is compiled as the job compiled it (``main_script``); its ``_bootstrap``
then runs as in a fork child. Other Python children (``python prep.py``)
only get the parent-death signal. The resource tracker gets nothing: it cleans up
shared memory after the job ends, so it must outlive it.

Kept light: a child that is no worker must not pay for importing torch.
"""

from __future__ import annotations

import os
import re
import sys

from quickdev.job.children import lifetime
from quickdev.job.children.setup import PARENT_ENV, SETUP_ENV

# The command lines multiprocessing (and its ``multiprocess`` fork) starts workers with.
_WORKER = re.compile(r"from multiprocess(ing)?\.(spawn|forkserver) import")
_RESOURCE_TRACKER = re.compile(r"from multiprocess(ing)?\.resource_tracker import")


def _command() -> str:
    """The ``-c`` code this interpreter runs, or ''."""
    argv = getattr(sys, "orig_argv", [])
    return argv[argv.index("-c") + 1] if "-c" in argv[:-1] else ""


def start() -> None:
    setup_text = os.environ.get(SETUP_ENV)
    if not setup_text:
        return
    command = _command()
    if _RESOURCE_TRACKER.search(command):
        return
    parent = os.environ.get(PARENT_ENV, "")
    lifetime.die_with_parent(int(parent) if parent.isdigit() else None)
    os.environ[PARENT_ENV] = str(os.getpid())
    if _WORKER.search(command):
        _install_limits(setup_text)


def _install_limits(setup_text: str) -> None:
    from quickdev.events import EventHub
    from quickdev.job import output_tee
    from quickdev.job.children.following import follow
    from quickdev.job.children.main_script import rewrite_main_script
    from quickdev.job.children.setup import Setup
    from quickdev.limits.install import install_limits
    from quickdev.limits.patching import Patcher

    setup, budget = Setup.from_json(setup_text)
    # Undone with the process.
    patcher = Patcher()
    output_tee.install(patcher, setup.run_dir, child=True)
    installed = install_limits(
        setup.options, setup.run_dir, EventHub(), budget, patcher, in_child=True
    )
    if installed.rewriter is not None:
        # The script re-run here as __mp_main__ holds the worker's function: its loops
        # get their exits as in the job.
        rewrite_main_script(patcher, installed.rewriter, setup.script)
    follow(patcher, setup, installed.recorder, budget, job_process=False)
