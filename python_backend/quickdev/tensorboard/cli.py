"""``quickdev tensorboard --logdir DIR [--stop]``: one JSON line on stdout."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from quickdev.processes import EXIT_FAILED, EXIT_USAGE
from quickdev.tensorboard.manager import (
    BadLogdir,
    TensorBoardError,
    ensure_tensorboard,
    stop_tensorboard,
)


def main(logdir: Path, stop: bool = False) -> int:
    if stop:
        pid = stop_tensorboard(logdir)
        print(json.dumps({"stopped": pid is not None, "pid": pid}), flush=True)
        return 0
    try:
        server = ensure_tensorboard(logdir)
    except TensorBoardError as exc:
        print(f"quickdev tensorboard: {exc}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, BadLogdir) else EXIT_FAILED
    print(json.dumps({"url": server.url, "pid": server.pid}), flush=True)
    return 0
