"""Imported at start-up by every Python a quick-dev job starts (see ``children``).

It joins the job's file journal, then runs the environment's own ``sitecustomize``
if there is one, which this file hides by coming first on ``sys.path``.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def _join() -> None:
    run_dir = os.environ.get("QUICKDEV_JOURNAL")
    if not run_dir:
        return
    try:
        from quickdev.limits.journal import children
    except ImportError:
        package = os.environ.get("QUICKDEV_JOURNAL_PACKAGE")
        if not package:
            raise
        sys.path.append(package)
        try:
            from quickdev.limits.journal import children
        finally:
            sys.path.remove(package)
    from pathlib import Path

    children.join(Path(run_dir))


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _join()
except Exception as exc:  # a child must start even where the journal cannot follow it
    sys.stderr.write(f"quickdev: this process's file changes are not journaled ({exc})\n")
_chain()
