"""``quickdev serve``: the language server over stdio. Never imports torch."""

from __future__ import annotations

from quickdev.server import lenses, log, runs, scan, settings, tensorboard_view
from quickdev.server.app import QuickdevServer


def build_server() -> QuickdevServer:
    server = QuickdevServer()
    for feature in (settings, lenses, scan, runs, tensorboard_view):
        feature.setup(server)
    return server


def serve() -> None:
    log.configure()
    build_server().start_io()
