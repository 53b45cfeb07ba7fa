"""Patch a framework the moment its module loads, so a script that never imports it
never pays for importing it (Lightning, transformers, accelerate, Fabric)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from quickdev.limits.patching import Patcher


def when_imported(
    patcher: Patcher, names: Sequence[str], patch: Callable[[ModuleType], None]
) -> None:
    """Run ``patch(module)`` for each of ``names`` once it has executed (now, for one
    already imported by an in-process caller)."""
    for name in names:
        module = sys.modules.get(name)
        if module is not None:
            patch(module)
    finder = _AfterImport(frozenset(names), patch)
    sys.meta_path.insert(0, finder)
    patcher.on_undo(lambda: sys.meta_path.remove(finder))


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, names: frozenset[str], patch: Callable[[ModuleType], None]) -> None:
        self.names = names
        self.patch = patch

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                self._wrap_loader(spec)
                return spec
        return None

    def _wrap_loader(self, spec: importlib.machinery.ModuleSpec) -> None:
        loader = spec.loader
        original_exec = loader.exec_module  # type: ignore[union-attr]
        patch = self.patch

        def exec_module(module: ModuleType) -> None:
            original_exec(module)
            patch(module)

        loader.exec_module = exec_module  # type: ignore[union-attr, method-assign]
