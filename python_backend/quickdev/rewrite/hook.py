"""The import hook: one finder, first on ``sys.meta_path``, for everything the job does as
modules load.

- The project's modules are compiled by the ``Rewriter`` (``install_import_hook``): for a
  source file the caller wants rewritten, the spec's loader is swapped for one whose
  ``get_code`` rewrites. Everything else (``__file__``, packages, ``-m``,
  ``importlib.reload``) is the normal source loader's. A rewritten module's bytecode goes
  to the rewriter's cache, never to the ``__pycache__`` beside the user's file; a file
  left as written loads through the normal path, ``__pycache__`` included, as under
  plain ``python``.
- A module named in advance is handed to a function right after it executes
  (``after_import``): the limits patch a framework the moment it loads, so a script that
  never imports it never pays for importing it.

The finder asks the finders after it (as the import system would) and changes only the
spec they return. It is on ``sys.meta_path`` while anything is registered, and gone once
the last registration is removed.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Sequence
from types import CodeType, ModuleType

from quickdev.rewrite.rewriter import Rewriter

Patch = Callable[[ModuleType], None]


def install_import_hook(rewriter: Rewriter, wanted: Callable[[str], bool]) -> Callable[[], None]:
    """Rewrite each module imported from now on whose source file ``wanted(path)`` accepts;
    returns the function that takes the hook away (modules loaded keep their code)."""
    entry = (rewriter, wanted)
    _FINDER.rewriting.insert(0, entry)  # the newest first, as a finder inserted first was
    _FINDER.attach()

    def remove() -> None:
        if entry in _FINDER.rewriting:
            _FINDER.rewriting.remove(entry)
        _FINDER.detach_when_idle()

    return remove


def after_import(names: Sequence[str], patch: Patch) -> Callable[[], None]:
    """Call ``patch(module)`` right after each module of ``names`` executes, for modules
    imported from now on; returns the function that stops it."""
    entries = [(name, patch) for name in names]
    for name, _ in entries:
        _FINDER.after.setdefault(name, []).append(patch)
    _FINDER.attach()

    def remove() -> None:
        for name, registered in entries:
            patches = _FINDER.after.get(name, [])
            if registered in patches:
                patches.remove(registered)
            if not patches:
                _FINDER.after.pop(name, None)
        _FINDER.detach_when_idle()

    return remove


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        # (rewriter, wanted), the newest first: the first that wants a file rewrites it.
        self.rewriting: list[tuple[Rewriter, Callable[[str], bool]]] = []
        self.after: dict[str, list[Patch]] = {}  # module name -> patches, in order
        # A finder after this one that asks every other finder would ask this one again,
        # and this one it: answer only the outer call.
        self._asking = threading.local()

    @property
    def rewriter(self) -> Rewriter | None:
        """The rewriter the newest ``install_import_hook`` gave, while it is installed."""
        return self.rewriting[0][0] if self.rewriting else None

    def attach(self) -> None:
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def detach_when_idle(self) -> None:
        if not self.rewriting and not self.after and self in sys.meta_path:
            sys.meta_path.remove(self)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if getattr(self._asking, "on", False):
            return None
        patches = list(self.after.get(fullname, ()))
        if not self.rewriting and not patches:
            return None
        self._asking.on = True
        try:
            spec = self._spec_after_me(fullname, path, target)
        finally:
            self._asking.on = False
        if spec is None:
            return None
        self._rewrite(spec)
        if patches and spec.loader is not None:
            _patch_after_exec(spec, patches)
        return spec

    def _spec_after_me(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None
    ) -> importlib.machinery.ModuleSpec | None:
        finders = sys.meta_path
        start = finders.index(self) + 1 if self in finders else len(finders)
        for finder in finders[start:]:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def _rewrite(self, spec: importlib.machinery.ModuleSpec) -> None:
        loader = spec.loader
        if type(loader) is not importlib.machinery.SourceFileLoader or not spec.origin:
            return
        for rewriter, wanted in self.rewriting:
            if wanted(spec.origin):
                spec.loader = _RewritingLoader(loader.name, loader.path, rewriter)
                return


_FINDER = _Finder()


def _patch_after_exec(spec: importlib.machinery.ModuleSpec, patches: list[Patch]) -> None:
    loader = spec.loader
    original_exec = loader.exec_module  # type: ignore[union-attr]

    def exec_module(module: ModuleType) -> None:
        original_exec(module)
        for patch in patches:
            patch(module)

    loader.exec_module = exec_module  # type: ignore[union-attr, method-assign]


class _RewritingLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, fullname: str, path: str, rewriter: Rewriter) -> None:
        super().__init__(fullname, path)
        self.rewriter = rewriter

    def get_code(self, fullname: str) -> CodeType | None:
        path = self.get_filename(fullname)
        try:
            source = self.get_data(path)
        except OSError:
            return super().get_code(fullname)  # the normal loader says what is wrong
        code = self.rewriter.code_for(source, path)
        return code if code is not None else super().get_code(fullname)
