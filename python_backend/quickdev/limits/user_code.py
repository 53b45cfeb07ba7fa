"""Telling the user's files apart from the libraries' (stdlib, site-packages, torch, us)."""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path

from quickdev.processes import PACKAGE_DIR


@lru_cache(maxsize=1)
def _library_roots() -> tuple[str, ...]:
    roots = {str(PACKAGE_DIR)}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(os.path.realpath(path))
    for path in [*site.getsitepackages(), site.getusersitepackages()]:
        roots.add(os.path.realpath(path))
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        roots.add(str(Path(str(torch.__file__)).resolve().parent))
    return tuple(root.rstrip(os.sep) + os.sep for root in roots)


@lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    path = os.path.realpath(filename)
    if "site-packages" in path or "dist-packages" in path:
        return False
    return not path.startswith(_library_roots())


@lru_cache(maxsize=1)
def _standard_library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib") if paths.get(key)}
    return tuple(root.rstrip(os.sep) + os.sep for root in roots)


@lru_cache(maxsize=4096)
def is_standard_library_file(filename: str) -> bool:
    """A module of Python's own library (not a package installed beside it; not frozen
    code such as the import machinery, whose file names start with ``<``)."""
    if not filename or filename.startswith("<"):
        return False
    path = os.path.realpath(filename)
    if "site-packages" in path or "dist-packages" in path:
        return False
    return path.startswith(_standard_library_roots())


def caller_origin(skip: int = 2) -> str:
    """``file:line`` of the innermost frame in the user's files above the caller."""
    frame = sys._getframe(skip)
    first: str | None = None
    while frame is not None:
        code = frame.f_code
        if first is None:
            first = f"{code.co_filename}:{frame.f_lineno}"
        if is_user_file(code.co_filename):
            return f"{code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return first or "<unknown>"
