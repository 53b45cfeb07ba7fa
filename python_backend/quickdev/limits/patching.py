"""Replace attributes for the length of one job and put the originals back afterwards.

The command line never needs the undo (the process ends), but the in-process API
must leave the user's interpreter as it found it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

_MISSING = object()


class Patcher:
    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []
        # (original, replacement) of each module attribute set: see limits/rebind.py.
        self._replaced: list[tuple[Any, Any]] = []

    def set(self, owner: Any, name: str, value: Any) -> Any:
        """Set ``owner.name = value``; returns the original as attribute access gave it."""
        original = getattr(owner, name)
        # Restore the raw entry (a staticmethod stays a staticmethod), or remove ours
        # when the attribute was inherited.
        raw = vars(owner).get(name, _MISSING) if hasattr(owner, "__dict__") else original

        def undo() -> None:
            if raw is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, raw)

        setattr(owner, name, value)
        self._undo.append(undo)
        if isinstance(owner, ModuleType):
            self._replaced.append((original, value))
        return original

    def set_environ(self, values: dict[str, str]) -> None:
        """Set environment variables for the job (its children see them too); undo puts
        back the values they had, or removes them."""
        before = {name: os.environ.get(name) for name in values}
        os.environ.update(values)

        def undo() -> None:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

        self._undo.append(undo)

    def replaced(self) -> list[tuple[Any, Any]]:
        """(original, replacement) of each module attribute set so far, oldest first."""
        return list(self._replaced)

    def on_undo(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` when the patches are undone (hook handles, meta path entries)."""
        self._undo.append(fn)

    def undo_all(self) -> None:
        while self._undo:
            self._undo.pop()()
        self._replaced.clear()
