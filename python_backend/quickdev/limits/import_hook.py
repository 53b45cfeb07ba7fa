"""Patch a framework the moment its module loads, so a script that never imports it
never pays for importing it (Lightning, transformers, accelerate, Fabric, the native file
writers). Through the one import finder of ``quickdev.rewrite``, undone with the patches."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from quickdev.limits.patching import Patcher
from quickdev.rewrite import after_import


def when_imported(
    patcher: Patcher, names: Sequence[str], patch: Callable[[ModuleType], None]
) -> None:
    """Run ``patch(module)`` for each of ``names`` once it has executed (now, for one
    already imported by an in-process caller)."""
    for name in names:
        module = sys.modules.get(name)
        if module is not None:
            patch(module)
    patcher.on_undo(after_import(names, patch))
