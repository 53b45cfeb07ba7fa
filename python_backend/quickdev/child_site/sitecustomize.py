"""Imported at start-up by every Python a quick-dev job starts (see ``children``).

It joins the job's file journal, runs the environment's own ``sitecustomize`` if there
is one (which this file hides by coming first on ``sys.path``), then makes the process
part of the job (``quickdev.job.children.spawned``).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def _quickdev_importable() -> Iterator[None]:
    """Where this Python's own path lacks quickdev, it is imported from where the job's
    came from; the path is left as it was."""
    try:
        import quickdev  # noqa: F401
    except ImportError:
        package = os.environ.get("QUICKDEV_JOURNAL_PACKAGE")
        if not package:
            raise
        sys.path.append(package)
        try:
            yield
        finally:
            sys.path.remove(package)
        return
    yield


def _join() -> None:
    run_dir = os.environ.get("QUICKDEV_JOURNAL")
    if not run_dir:
        return
    with _quickdev_importable():
        from quickdev.limits.journal import children
    from pathlib import Path

    children.join(Path(run_dir))


def _follow() -> None:
    """A process the script starts is part of the job: its life is tied to the job's,
    and a multiprocessing worker runs under the job's limits (quickdev.job.children)."""
    if not os.environ.get("QUICKDEV_CHILD_JOB"):
        return
    with _quickdev_importable():
        from quickdev.job.children import spawned

        spawned.start()


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
try:
    _follow()
except Exception as exc:  # nor must the limits stop it
    sys.stderr.write(f"quickdev: this process runs without the job's limits ({exc})\n")
