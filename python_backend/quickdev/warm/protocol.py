"""Messages between the language server and a warm process, typed once for both sides.

One JSON object per ``SOCK_SEQPACKET`` datagram (so boundaries survive), its ``op`` naming
the message's type, file descriptors beside it (``SCM_RIGHTS``). Standard library only:
the server imports this, and so does the warm process, in the job's interpreter.

Server → warm: ``Preload``, ``Fork`` (with the job's stdin, stdout and stderr).
Warm → server: ``Ready`` (after each preload), ``Forked`` or ``Refused`` (a fork's answer),
``Exited`` (a job it forked ended).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import socket
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

MAX_MESSAGE = 1 << 20
MAX_FDS = 8


@dataclass(frozen=True)
class Preload:
    """Import these modules (each with the names taken from it), never one under
    ``user_roots``, then the job's own modules."""

    op: ClassVar[str] = "preload"
    modules: list[tuple[str, list[str]]]
    user_roots: list[str]

    def __post_init__(self) -> None:
        # JSON has no tuples: both sides see the same shape.
        modules = [(str(name), [str(a) for a in names]) for name, names in self.modules]
        object.__setattr__(self, "modules", modules)


@dataclass(frozen=True)
class Fork:
    """Fork a job that runs ``quickdev`` with ``argv`` in ``cwd`` with ``env``."""

    op: ClassVar[str] = "fork"
    id: int
    argv: list[str]
    cwd: str
    env: dict[str, str]


@dataclass(frozen=True)
class Ready:
    """A preload ended: what was imported or skipped (module: why), why forking is unsafe
    now (and the module whose import made it so), the resident size, and the paths whose
    change means an imported module may be stale, with their modification times (ns)
    taken before the imports."""

    op: ClassVar[str] = "ready"
    loaded: list[str]
    skipped: dict[str, str]
    unsafe: str | None
    culprit: str | None
    rss_mb: float | None
    watch: dict[str, int | None]


@dataclass(frozen=True)
class Forked:
    op: ClassVar[str] = "forked"
    id: int
    pid: int


@dataclass(frozen=True)
class Refused:
    op: ClassVar[str] = "refused"
    id: int
    reason: str


@dataclass(frozen=True)
class Exited:
    op: ClassVar[str] = "exit"
    pid: int
    returncode: int


ToWarm = Preload | Fork
FromWarm = Ready | Forked | Refused | Exited
Message = ToWarm | FromWarm
_TYPES: dict[str, type[Message]] = {
    kind.op: kind for kind in (Preload, Fork, Ready, Forked, Refused, Exited)
}


def stamp(path: str) -> int | None:
    """What ``Ready.watch`` holds for ``path``, None when it is gone: a file's modification
    time in nanoseconds; for a folder, a digest of what an install or an upgrade changes in
    it: the names it holds and each file's modification time. Not the folder's own time,
    nor anything of ``__pycache__``: any interpreter that imports from the folder may write
    its bytecode cache there (a new ``__pycache__`` changes the folder's time), which changes
    no library."""
    try:
        info = os.stat(path)
        if not stat.S_ISDIR(info.st_mode):
            return info.st_mtime_ns
        digest = hashlib.blake2b(digest_size=8)
        with os.scandir(path) as entries:
            for entry in sorted(entries, key=lambda entry: entry.name):
                if entry.name == "__pycache__":
                    continue
                # A subfolder by its name: its own time changes with its bytecode cache.
                mtime = 0 if entry.is_dir() else entry.stat().st_mtime_ns
                digest.update(f"{entry.name}\0{mtime}\0".encode(errors="surrogateescape"))
        return int.from_bytes(digest.digest(), "big")
    except OSError:
        return None


def pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send(sock: socket.socket, message: Message, fds: Sequence[int] = ()) -> None:
    data = json.dumps({"op": message.op, **dataclasses.asdict(message)}).encode("utf-8")
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.send(data)


def receive(sock: socket.socket) -> tuple[Message, list[int]] | None:
    """The next message and the descriptors sent with it; None at end of stream.
    ValueError for a datagram that is no message."""
    data, fds, _flags, _address = socket.recv_fds(sock, MAX_MESSAGE, MAX_FDS)
    if not data:
        for fd in fds:
            _close(fd)
        return None
    try:
        return _decode(data), fds
    except ValueError:
        for fd in fds:
            _close(fd)
        raise


def _decode(data: bytes) -> Message:
    payload = json.loads(data)
    kind = _TYPES.get(payload.pop("op", None)) if isinstance(payload, dict) else None
    if kind is None:
        raise ValueError(f"not a warm-process message: {data[:200]!r}")
    try:
        return kind(**payload)
    except TypeError as exc:
        raise ValueError(f"a malformed {kind.op} message: {exc}") from None


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
