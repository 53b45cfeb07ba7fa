"""The import hook: the project's modules are compiled by the ``Rewriter`` as they load.

First on ``sys.meta_path``, the finder asks the finders after it (as the import system
would) and, for a source file the caller wants rewritten, swaps the spec's loader for
one whose ``get_code`` rewrites. Everything else (``__file__``, packages, ``-m``,
``importlib.reload``) is the normal source loader's. A rewritten module's bytecode goes
to the rewriter's cache, never to the ``__pycache__`` beside the user's file; a file
left as written loads through the normal path, ``__pycache__`` included, as under
plain ``python``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Sequence
from types import CodeType, ModuleType

from quickdev.rewrite.rewriter import Rewriter


def install_import_hook(rewriter: Rewriter, wanted: Callable[[str], bool]) -> Callable[[], None]:
    """Rewrite each module imported from now on whose source file ``wanted(path)`` accepts;
    returns the function that takes the hook away (modules loaded keep their code)."""
    finder = _RewritingFinder(rewriter, wanted)
    sys.meta_path.insert(0, finder)

    def remove() -> None:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)

    return remove


class _RewritingFinder(importlib.abc.MetaPathFinder):
    def __init__(self, rewriter: Rewriter, wanted: Callable[[str], bool]) -> None:
        self.rewriter = rewriter
        self.wanted = wanted
        # A finder after this one that asks every other finder (a framework's after-import
        # hook) would ask this one again, and this one it: answer only the outer call.
        self._asking = threading.local()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if getattr(self._asking, "on", False):
            return None
        self._asking.on = True
        try:
            return self._find_spec(fullname, path, target)
        finally:
            self._asking.on = False

    def _find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None
    ) -> importlib.machinery.ModuleSpec | None:
        finders = sys.meta_path
        start = finders.index(self) + 1 if self in finders else len(finders)
        for finder in finders[start:]:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
            if spec is None:
                continue
            loader = spec.loader
            if (
                type(loader) is importlib.machinery.SourceFileLoader
                and spec.origin
                and self.wanted(spec.origin)
            ):
                spec.loader = _RewritingLoader(loader.name, loader.path, self.rewriter)
            return spec
        return None


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
