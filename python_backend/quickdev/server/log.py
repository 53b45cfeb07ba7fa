"""The server's one logger. Output goes to stderr: stdout carries the protocol."""

from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger("quickdev.server")

LEVEL_VARIABLE = "QUICKDEV_LOG_LEVEL"


def configure() -> None:
    """Quiet by default; ``QUICKDEV_LOG_LEVEL=info`` for the server's own account (jobs,
    warm start), ``debug`` for everything, pygls's every message included."""
    level = getattr(logging, os.environ.get(LEVEL_VARIABLE, "warning").upper(), logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    # pygls logs each message it sends at info: only at debug, or info would be a dump.
    root.setLevel(level if level <= logging.DEBUG else max(level, logging.WARNING))
    logging.getLogger("quickdev").setLevel(level)
