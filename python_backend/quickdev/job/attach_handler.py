"""The in-job half of attach: a quick-dev job accepts a debugger on SIGUSR1.

It writes ``RUN_DIR/attach.json`` (the signal it listens on) once the handler is in place;
the job's identity (PID, start time, command line) is in its ``process.json``. On the
signal it starts debugpy on 127.0.0.1 (a free port) and writes ``RUN_DIR/debugpy.json``;
asking again reuses the same address, so attach, detach and attach again all work. The
outside half is ``quickdev.attach``.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from quickdev.rundir.jsonio import write_json
from quickdev.rundir.layout import ATTACH_FILE

log = logging.getLogger(__name__)

ATTACH_SIGNAL_NAME = "SIGUSR1"


def install_attach_handler(run_dir: Path, on_attach: Callable[[], None] | None = None) -> bool:
    """Let the job accept a debugger on SIGUSR1; returns False where that is impossible.

    Must be called from the main thread (Python installs signal handlers only there).
    The handler runs in the main thread too, which is what we want: debugpy then
    traces the frames the training loop is in right now, so breakpoints set after
    attaching are hit on the next iteration. ``on_attach`` runs once debugpy listens.
    """
    signum = getattr(signal, ATTACH_SIGNAL_NAME, None)
    if signum is None or threading.current_thread() is not threading.main_thread():
        return False

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        from quickdev.job.debugger import start_debugger

        try:
            start_debugger(("127.0.0.1", 0), wait_for_client=False, run_dir=run_dir)
            if on_attach is not None:
                on_attach()
        except Exception:
            # The user's training must go on even when the debugger cannot start.
            log.exception("could not start debugpy on %s", ATTACH_SIGNAL_NAME)

    signal.signal(signum, on_signal)
    write_json(run_dir / ATTACH_FILE, {"signal": ATTACH_SIGNAL_NAME})
    return True
