"""Names a library bound before the limits replaced them (``from torch import load`` at
its top), pointed at the replacements, as a cold job's imports would have bound them.

A cold job imports the script's libraries after the limits are installed, so a library's
``from torch import load`` binds the limited ``load``. A job forked from a warm process,
and a debug job that imported Lightning early, find them imported already, holding the
originals: without this, ``load(..., map_location="cuda")`` inside such a library (or
torchmetrics' ``tensor(..., device="cuda")``) would fail on a CPU machine in those jobs only.
Only module attributes are concerned: a class's replaced method is looked up on the class
at each call.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from quickdev.limits.patching import Patcher

# The job's own machinery and what a cold job imports before the limits (torch, and the
# standard library): they hold the originals in a cold job too.
COLD_BEFORE_LIMITS = frozenset({"quickdev", "torch", *sys.stdlib_module_names})


def imported_before_limits(imported_early: Iterable[str] = ()) -> list[str]:
    """The modules a plain cold job imports only after the limits that this one imported
    before them: a warm process's preloads (``WarmStart.preloaded``), and a debug job's
    Lightning (imported before debugpy's tracing slows imports down)."""
    names = dict.fromkeys(imported_early)
    return [name for name in names if name.partition(".")[0] not in COLD_BEFORE_LIMITS]


def install(patcher: Patcher, module_names: Iterable[str]) -> int:
    """Point ``module_names``' globals that are a replaced original at its replacement;
    returns how many (through ``patcher``, so the in-process API undoes them too)."""
    replacements: dict[int, tuple[Any, Any]] = {}
    for original, new in patcher.replaced():
        # Functions and classes only: a replaced flag's ``True`` is every module's ``True``.
        if callable(original):
            replacements.setdefault(id(original), (original, new))
    count = 0
    for name in module_names:
        module = sys.modules.get(name)
        if not isinstance(module, ModuleType):
            continue
        for attribute, value in list(vars(module).items()):
            found = replacements.get(id(value))
            if found is not None and found[0] is value:
                patcher.set(module, attribute, _last(found[1], replacements))
                count += 1
    return count


def _last(value: Any, replacements: dict[int, tuple[Any, Any]]) -> Any:
    """The newest replacement of ``value`` (an attribute replaced twice)."""
    for _ in range(len(replacements)):
        found = replacements.get(id(value))
        if found is None or found[0] is not value:
            break
        value = found[1]
    return value
