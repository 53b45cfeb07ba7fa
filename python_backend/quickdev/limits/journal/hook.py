"""The audit hook: Python announces each file operation before it happens (PEP 578).

``open`` (built-in, ``os.open``, ``io.open_code``), ``os.rename``/``os.replace``,
``os.remove``/``os.unlink``, ``os.rmdir``, ``os.mkdir`` (so ``os.makedirs``),
``os.truncate``, ``os.chmod``/``os.chown``/``os.utime`` (the original's mode and
times come back) and ``shutil.rmtree`` each raise an event with their paths; the hook
records the path's state first. An audit hook cannot be removed, so it is added
once per process and does nothing while no journal is active.

``os.open(name, flags, dir_fd=fd)`` raises ``open`` without its ``dir_fd``, so the
event's relative name would be taken as relative to the working directory: ``os.open``
is wrapped to resolve such a name itself (``open_at``).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from quickdev.limits.journal.journal import Journal
from quickdev.limits.journal.registry import WRITERS, Action, NativeWriter, targets

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

_active: Journal | None = None
_installed = False
_busy = threading.local()
_handlers: dict[str, Any] = {}


def _no_pause(on: int) -> None:
    """Without an interposer there is nothing to pause."""


_pause: Callable[[int], None] = _no_pause


def activate(
    journal: Journal | None, *, files: bool = True, pause: Callable[[int], None] | None = None
) -> None:
    """``files`` False: only the native writers' announcements and events (an interposed
    job, whose file calls the journal process sees); ``pause``: stops the interposer
    asking about the journal's own changes in this thread while it makes them."""
    global _active, _installed, _handlers, _pause
    _active = journal
    _handlers = _HANDLERS if files else _NATIVE_HANDLERS
    _pause = pause or _no_pause
    if journal is not None and not _installed:
        sys.addaudithook(_hook)
        _installed = True


def active() -> Journal | None:
    return _active


def _hook(event: str, args: tuple[Any, ...]) -> None:
    # Called for every audited event in the process (id(), getattr, imports): the
    # first test must be the cheapest one.
    handler = _handlers.get(event)
    if handler is None or _active is None or getattr(_busy, "on", False):
        return
    _busy.on = True  # the journal's own renames and opens are not the job's
    _pause(1)
    try:
        handler(_active, args)
    finally:
        _pause(0)
        _busy.on = False


def announce(found: list[tuple[str, Action]]) -> None:
    """A native writer (``registry``) is about to change these paths."""
    if not found or _active is None or getattr(_busy, "on", False):
        return
    _busy.on = True
    _pause(1)
    try:
        for path, action in found:
            _before_native(_active, path, action)
    finally:
        _pause(0)
        _busy.on = False


def _before_native(journal: Journal, path: str, action: Action) -> None:
    if action == "create" and os.path.lexists(path):
        return  # the library refuses an existing file by itself
    journal.before_native(path, action)


def _native_event(writer: NativeWriter) -> Any:
    def handle(journal: Journal, args: tuple[Any, ...]) -> None:
        for path, action in targets(writer, args, {}):
            _before_native(journal, path, action)

    return handle


def open_at(original: Any) -> Any:
    """``os.open`` that journals a write relative to a ``dir_fd`` at its real path."""

    @functools.wraps(original)
    def open_(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if dir_fd is None or _active is None or getattr(_busy, "on", False):
            return int(original(path, flags, mode, dir_fd=dir_fd))
        _busy.on = True  # the event that follows names the path without its dir_fd
        try:
            _open(_active, (path, None, flags), dir_fd)
            return int(original(path, flags, mode, dir_fd=dir_fd))
        finally:
            _busy.on = False

    return open_


def _open(journal: Journal, args: tuple[Any, ...], dir_fd: int | None = None) -> None:
    path, mode, flags = args
    if isinstance(path, int):
        return
    writes = flags & _WRITE_FLAGS or (mode and any(c in mode for c in "wax+"))
    name = path_of(path, dir_fd)
    if name is None:
        return
    journal.saw(name)  # its folder is listed, for files a native writer adds there
    if not writes:
        return
    if flags & os.O_EXCL and os.path.lexists(name):
        return  # the open fails by itself and changes nothing
    journal.before_write(name, truncate=bool(flags & os.O_TRUNC), append=bool(flags & os.O_APPEND))


def _rename(journal: Journal, args: tuple[Any, ...]) -> None:
    src, dst = path_of(args[0], args[2]), path_of(args[1], args[3])
    if src is not None and dst is not None:
        journal.before_rename(src, dst)


def _one_path(method: str) -> Any:
    def handle(journal: Journal, args: tuple[Any, ...]) -> None:
        dir_fd = args[-1] if len(args) > 1 and isinstance(args[-1], int) else None
        name = path_of(args[0], dir_fd)
        if name is not None:
            getattr(journal, method)(name)

    return handle


def _truncate(journal: Journal, args: tuple[Any, ...]) -> None:
    name = path_of(args[0])
    if name is not None:
        journal.before_write(name, truncate=False)


def path_of(value: Any, dir_fd: int | None = None) -> str | None:
    """The absolute path an event names; None for a file descriptor."""
    if isinstance(value, int) or value is None:
        return None
    try:
        name = os.fsdecode(os.fspath(value))
    except TypeError:
        return None
    if not os.path.isabs(name) and dir_fd is not None and dir_fd >= 0:
        try:
            base = os.readlink(f"/proc/self/fd/{dir_fd}")
        except OSError:
            return None
        return os.path.normpath(os.path.join(base, name))
    return os.path.abspath(name)


_HANDLERS = {
    "open": _open,
    "os.rename": _rename,  # os.replace raises the same event
    "os.remove": _one_path("before_remove"),
    "os.rmdir": _one_path("before_remove"),
    "os.mkdir": _one_path("before_create"),
    "os.truncate": _truncate,
    "shutil.rmtree": _one_path("before_rmtree"),
    # Metadata changes: the original (with its mode and times) is kept as for an update.
    "os.chmod": _one_path("before_update"),
    "os.chown": _one_path("before_update"),
    "os.utime": _one_path("before_update"),
    "os.link": lambda j, a: _one_path("before_create")(j, (a[1], a[3])),
    "os.symlink": lambda j, a: _one_path("before_create")(j, (a[1], a[2])),
}
# Native libraries that raise an event of their own with the path (SQLite).
_NATIVE_HANDLERS = {w.event: _native_event(w) for w in WRITERS if w.event}
_HANDLERS.update(_NATIVE_HANDLERS)
