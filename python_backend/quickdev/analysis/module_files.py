"""The user's modules as ``python -m`` sees them, found on disk without importing anything:
the file a module name runs, and the module a file only runs as.
"""

from __future__ import annotations

import re
from pathlib import Path


def module_file(module: str, cwd: Path) -> Path | None:
    """The file ``python -m module`` run from ``cwd`` executes when the module is the user's
    own, under ``cwd``: ``pkg/train.py``, or ``pkg/train/__main__.py`` for a package."""
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    base = cwd.joinpath(*parts)
    for candidate in (base.parent / f"{parts[-1]}.py", base / "__main__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_entry(path: Path, source: str) -> tuple[str, Path] | None:
    """``(module, folder to run it from)`` when ``path`` runs only as ``python -m``: it lies in
    a package (its folder has ``__init__.py``) and imports that package, relatively or by name,
    which ``python path`` cannot resolve. None for a file that runs as a script."""
    if not (path.parent / "__init__.py").is_file():
        return None
    top = path.parent
    while (top.parent / "__init__.py").is_file():
        top = top.parent
    parts = list(path.relative_to(top.parent).with_suffix("").parts)
    if parts[-1] == "__main__":
        parts.pop()
    if not all(part.isidentifier() for part in parts):
        return None
    own = rf"^[ \t]*(?:from[ \t]+\.|(?:from|import)[ \t]+{re.escape(top.name)}\b)"
    if re.search(own, source, re.MULTILINE) is None:
        return None
    return ".".join(parts), top.parent
