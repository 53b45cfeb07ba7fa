"""``quickdev serve``: the language server over stdio. Never imports torch."""

from __future__ import annotations

from quickdev.collector import freeze_imports
from quickdev.server import (
    attach_view,
    lenses,
    log,
    run_files,
    runs,
    scan,
    settings,
    sources,
    tensorboard_view,
    warm,
)
from quickdev.server.app import QuickdevServer


def build_server() -> QuickdevServer:
    server = QuickdevServer()
    for feature in (
        settings,
        lenses,
        scan,
        runs,
        warm,
        run_files,
        tensorboard_view,
        attach_view,
        sources,
    ):
        feature.setup(server)
    return server


def serve() -> None:
    log.configure()
    server = build_server()
    # The tens of thousands of objects from importing pygls and lsprotocol live as long as the
    # server; freezing them keeps full collections short, which keeps lens latency even.
    freeze_imports()
    server.start_io()
