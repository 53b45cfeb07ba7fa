"""The registry's writers (``registry``) wrapped at the last Python function that holds the path.

Each wrapper tells the journal what the call is about to do to which paths, then calls
the library: the original is aside before the native code opens the file. Modules
imported later are wrapped as they load; a library that is not installed costs nothing.
Writers seen through an audit event of their own (SQLite's ``sqlite3.connect``) need no
wrapper: ``hook`` handles them from the same registry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any

from quickdev.limits.import_hook import when_imported
from quickdev.limits.journal import hook
from quickdev.limits.journal.registry import WRITERS, NativeWriter, targets
from quickdev.limits.patching import Patcher

WRAPPED = tuple(w for w in WRITERS if w.module)
_BASETYPE = 1 << 10  # Py_TPFLAGS_BASETYPE: the class may be subclassed


def install(patcher: Patcher) -> None:
    modules = sorted({w.module for w in WRAPPED})
    when_imported(patcher, modules, lambda module: _wrap_module(module, patcher))


def _wrap_module(module: ModuleType, patcher: Patcher) -> None:
    for writer in WRAPPED:
        if writer.module != module.__name__:
            continue
        owner = getattr(module, writer.owner, None) if writer.owner else module
        original = getattr(owner, writer.name, None)
        if isinstance(original, type) and original.__flags__ & _BASETYPE:
            patcher.set(owner, writer.name, _announcing_class(original, writer))
        elif original is not None:
            patcher.set(owner, writer.name, _announcing(original, writer))


def _announcing(original: Callable[..., Any], writer: NativeWriter) -> Callable[..., Any]:
    @functools.wraps(original)
    def write(*args: Any, **kwargs: Any) -> Any:
        if hook.active() is not None:
            hook.announce(targets(writer, args, kwargs))
        return original(*args, **kwargs)

    return write


def _announcing_class(original: type, writer: NativeWriter) -> type:
    """A class that opens the file as it is made (a C++ ``__cinit__``): a subclass announces
    in ``__new__``, and instances are still instances of the original."""

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        if hook.active() is not None:
            hook.announce(targets(writer, args, kwargs))
        return original.__new__(cls, *args, **kwargs)

    namespace = {"__new__": __new__, "__module__": original.__module__}
    return type(original.__name__, (original,), namespace)
