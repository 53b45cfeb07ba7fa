"""``python -m quickdev.job.distributed.loopback ARGS``: torchrun, reachable from this machine only.

torchrun's TCP stores (the rendezvous and the one its ranks share) listen on every
interface whatever host they are given, so anyone on the network could join or poison a
quick-dev job's rendezvous. A store created on a listening socket that is bound to
127.0.0.1 (``master_listen_fd``) listens there only; this module makes every store
torchrun hosts such a store, then runs torchrun with ``ARGS``.
"""

from __future__ import annotations

import runpy
import socket
import sys
from typing import Any

# The listening sockets the stores serve on: they must stay open as long as the stores.
_sockets: list[socket.socket] = []


def _loopback_store_class() -> type[Any]:
    import torch.distributed as dist

    base: type[Any] = dist.TCPStore  # type: ignore[attr-defined]

    class LoopbackTCPStore(base):  # type: ignore[misc]
        def __init__(self, host_name: str, port: int, *args: Any, **kwargs: Any) -> None:
            if kwargs.get("is_master") and kwargs.get("master_listen_fd") is None:
                sock = socket.create_server(("127.0.0.1", port), backlog=128)
                _sockets.append(sock)
                kwargs["master_listen_fd"] = sock.fileno()
                host_name, port = "127.0.0.1", sock.getsockname()[1]
            super().__init__(host_name, port, *args, **kwargs)

    return LoopbackTCPStore


def main() -> None:
    import torch.distributed as dist

    # Before torchrun's modules import the name.
    dist.TCPStore = _loopback_store_class()  # type: ignore[attr-defined]
    sys.argv = ["torchrun", *sys.argv[1:]]
    runpy.run_module("torch.distributed.run", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
