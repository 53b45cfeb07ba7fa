"""What a job imports before the limits are installed and the user's code runs."""

from __future__ import annotations

import sys

from quickdev.collector import freeze_imports
from quickdev.frameworks import FRAMEWORKS
from quickdev.job.target import Target
from quickdev.options import RunOptions


def import_heavy_modules(options: RunOptions, target: Target, *, in_process: bool) -> list[str]:
    """torch always; a framework's ``debug_imports`` too (Lightning's) when debugging a
    script that mentions it. Returns the modules imported here besides torch (they are
    imported before the limits).

    In a job's own process, what they leave alive is then frozen (``collector``), as in a
    warm process: every full collection of the run (the torch._dynamo import that a first
    optimizer triggers runs several, the interpreter's shutdown more) skips them. Never in
    the caller's process (the in-process API), whose objects are not ours to keep.
    torch._dynamo itself is left to the script: a script without torch.optim (manual SGD)
    never imports it, and frozen torch makes its import quick enough for the others.

    Imported before debugpy starts, since its tracing makes imports slow. Without a
    debugger, a framework is imported only if and when the script imports it.
    """
    import torch  # noqa: F401

    before = set(sys.modules)
    if options.listen is not None:
        for framework in FRAMEWORKS:
            if framework.debug_imports and target.mentions(framework.packages[0]):
                _import_first(framework.debug_imports)
    imported = [name for name in sys.modules if name not in before]
    if not in_process:
        freeze_imports()
    return imported


def _import_first(names: tuple[str, ...]) -> None:
    """The first of ``names`` that imports (``lightning.pytorch``, else the older
    ``pytorch_lightning``)."""
    for name in names:
        try:
            __import__(name)
            return
        except ImportError:
            continue
