"""``python -m quickdev.tensorboard.launch``: TensorBoard with a working profiler plugin.

Checks that the plugin imports and loads, applies our compatibility fixes, binds
127.0.0.1 only, and (when given an owner) exits when its owner process is gone.
Started by the manager; not meant to be run by hand.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence

INSTALL_HINT = "pip install torch-tb-profiler==0.4.3 tensorboard==2.21.0"
EXIT_MISSING_PLUGIN = 3


def _exit_on_sigterm(signum: int, frame: object) -> None:
    # Unwinds the main thread, so exit handlers run: the plugin removes its temporary
    # directory and multiprocessing ends its helper processes.
    raise SystemExit(0)


def _stop_all() -> None:
    """Ends this server and its helpers (the data server, the plugin's processes)."""
    if hasattr(os, "killpg") and os.getpgrp() == os.getpid():  # we lead our own group
        os.killpg(os.getpgrp(), signal.SIGTERM)
    else:
        os.kill(os.getpid(), signal.SIGTERM)


def _watch_owner(owner_pid: int) -> None:
    """Stop this server when the process that owns it has exited, even if killed."""
    while True:
        time.sleep(1.0)
        try:
            os.kill(owner_pid, 0)
        except ProcessLookupError:
            _stop_all()
            return
        except PermissionError:
            pass  # alive, owned by someone else


def _load_plugin() -> list[object]:
    """TensorBoard's plugins with ours among them; raises ImportError naming what is missing."""
    from quickdev.tensorboard import compat

    compat.apply()
    from tensorboard import default
    from torch_tb_profiler.plugin import TorchProfilerPlugin

    plugins: list[object] = list(default.get_plugins())
    if TorchProfilerPlugin not in plugins:
        plugins.append(TorchProfilerPlugin)
    return plugins


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m quickdev.tensorboard.launch")
    parser.add_argument("--logdir", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--owner-pid", type=int)
    args = parser.parse_args(argv)

    try:
        plugins = _load_plugin()
    except ImportError as exc:
        print(
            f"quickdev tensorboard: the PyTorch Profiler plugin cannot load ({exc}); "
            f"install it with: {INSTALL_HINT}",
            file=sys.stderr,
        )
        return EXIT_MISSING_PLUGIN

    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    if args.owner_pid:
        threading.Thread(target=_watch_owner, args=(args.owner_pid,), daemon=True).start()

    from absl import app
    from tensorboard import main_lib, program

    main_lib.global_init()
    server = program.TensorBoard(plugins=plugins)
    flags = [
        sys.argv[0],
        "--logdir",
        args.logdir,
        "--host",
        "127.0.0.1",
        "--port",
        str(args.port),
    ]
    # absl's app.run sets up TensorBoard's logging and exits with the server's status.
    app.run(lambda _argv: server.main(), argv=flags, flags_parser=server.configure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
