"""Messages between the language server and a warm process: one JSON object per
``SOCK_SEQPACKET`` datagram (so boundaries survive), file descriptors beside it
(``SCM_RIGHTS``). Standard library only: both sides import this.

Server → warm: ``{"op": "preload", "modules": [[name, [attr, ...]], ...], "user_roots": [...]}``,
``{"op": "fork", "id": N, "argv": [...], "cwd": ..., "env": {...}}`` with fds stdin, stdout,
stderr. Warm → server: ``{"op": "ready", ...}``, ``{"op": "forked", "id": N, "pid": P}``,
``{"op": "refused", "id": N, "reason": ...}``, ``{"op": "exit", "pid": P, "returncode": R}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Sequence
from typing import Any

MAX_MESSAGE = 1 << 20
MAX_FDS = 8


def pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send(sock: socket.socket, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
    data = json.dumps(message).encode("utf-8")
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.send(data)


def receive(sock: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """The next message and the descriptors sent with it; None at end of stream."""
    data, fds, _flags, _address = socket.recv_fds(sock, MAX_MESSAGE, MAX_FDS)
    if not data:
        for fd in fds:
            _close(fd)
        return None
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError(f"expected a JSON object, got {type(message).__name__}")
    return message, fds


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
