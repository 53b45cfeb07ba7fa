"""Advisory locks on run-directory files (``flock``): held by a live process, dropped by the
kernel when it dies, however it dies. Windows has no ``flock``: nothing is ever held."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


def hold(fd: int) -> None:
    """Lock ``fd`` for as long as it stays open (blocking while another holds it)."""
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)


def held(path: Path) -> bool:
    """Whether a live process holds ``path``'s lock."""
    if fcntl is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold ``path``'s lock (created if missing) for the ``with`` block. Not reentrant."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        hold(fd)
        yield
    finally:
        os.close(fd)
