"""``quickdev serve``: the language server over stdio. Never imports torch."""

from __future__ import annotations

from quickdev.collector import freeze_imports
from quickdev.server import (
    attach_view,
    lenses,
    log,
    run_commands,
    run_files,
    runs,
    scan,
    settings,
    sources,
    start_job,
    tensorboard_view,
    warm,
)
from quickdev.server.app import QuickdevServer


def build_server() -> QuickdevServer:
    server = QuickdevServer()
    for feature in (settings, lenses, scan):
        feature.setup(server)
    # Jobs start through the warm start: forked from a warm process when one is ready and
    # safe, else cold (server/warm.py).
    pool = warm.setup(server)
    runs.setup(server, launch=pool.launch)
    for feature in (start_job, run_commands, run_files, tensorboard_view, attach_view, sources):
        feature.setup(server)
    return server


def serve() -> None:
    log.configure()
    server = build_server()
    # The tens of thousands of objects from importing pygls and lsprotocol live as long as the
    # server; freezing them keeps full collections short, which keeps lens latency even.
    freeze_imports()
    server.start_io()
