"""In a spawned process: the job's script, re-run as ``__mp_main__``, compiled as the job's.

A spawn or forkserver worker is a fresh interpreter: to find the function it is to run
(``mp.spawn(main, …)``, ``Process(target=train)``) multiprocessing runs the parent's main
script again, as ``__mp_main__`` (its ``if __name__ == "__main__":`` block does not run),
with ``runpy.run_path`` (``multiprocessing.spawn._fixup_main_from_path``). That is not an
import: the job's import hook never sees it, and the worker's functions would run as
written, their loops without the exits the job's own copy has. So in such a process
``runpy.run_path`` of the job's script compiles it with the job's rewriter, as the job
compiled it (``ScriptTarget.run``); any other path runs as runpy runs it. A script run
with ``-m`` is re-run by name, through the import hook, and needs nothing here.
"""

from __future__ import annotations

import os
import runpy
from typing import Any

from quickdev.job.target import run_as_module
from quickdev.limits.patching import Patcher
from quickdev.rewrite import Rewriter


def rewrite_main_script(patcher: Patcher, rewriter: Rewriter, script: str) -> None:
    """From now on, ``runpy.run_path(script, …)`` runs the rewritten ``script``."""
    if not script or not os.path.isfile(script):
        return  # the job runs a module or a callable: nothing of it is re-run by path
    wanted = os.path.realpath(script)
    original = runpy.run_path

    def run_path(
        path_name: Any, init_globals: dict[str, Any] | None = None, run_name: str | None = None
    ) -> dict[str, Any]:
        code = None
        try:
            filename = os.fsdecode(path_name)
            if os.path.realpath(filename) == wanted:
                with open(filename, "rb") as file:
                    # Compiled under the name the job compiled it with (its loop exits).
                    code = rewriter.code_for(file.read(), os.path.abspath(filename))
        except (TypeError, OSError):
            pass  # runpy says what is wrong with the path
        if code is not None:
            return run_as_module(code, filename, run_name or "<run_path>", init_globals)
        return original(path_name, init_globals, run_name)

    patcher.set(runpy, "run_path", run_path)
