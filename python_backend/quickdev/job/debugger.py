"""Debugger support inside the job process.

``start_debugger`` is called by the job after torch and the other heavy modules
are imported (debugpy traces every line while it is on, which makes imports slow)
and before the script runs. It records where it listens in ``RUN_DIR/debugpy.json``
(see quickdev.rundir.layout), so a client that asked for port 0 learns the real port.

debugpy can listen only once per process; asking again (a second attach request)
returns the address it already listens on, and clients may attach, detach and
attach again to that one address.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import types
from pathlib import Path
from typing import Any

from quickdev.limits.budget import StopJob
from quickdev.limits.nonfinite.found import NonFiniteFound
from quickdev.processes import DEBUGPY_PATH_ENV
from quickdev.rundir.jsonio import write_json
from quickdev.rundir.layout import DEBUGPY_FILE

log = logging.getLogger(__name__)

NO_CLIENT = "no debugger attached"  # the stop reason of a job that waited in vain
_lock = threading.Lock()
_listening: tuple[str, int] | None = None


class DebuggerError(RuntimeError):
    """debugpy could not start; the message is one line that names the fix."""


def start_debugger(
    listen: tuple[str, int],
    wait_for_client: bool,
    run_dir: Path,
    client_timeout_s: float | None = None,
) -> tuple[str, int]:
    """Listen for a debugger on ``listen`` (port 0: a free port) and record the address.

    Returns the (host, port) debugpy really listens on. With ``wait_for_client`` it
    returns only once a client has attached and finished its configuration, so
    breakpoints set by that client are already in place; after ``client_timeout_s``
    without one it raises StopJob (``NO_CLIENT``) rather than hold the job forever.
    """
    global _listening
    # pydevd warns on every start that frozen stdlib modules may hide breakpoints; they
    # are stdlib modules nobody steps through here, and the warning reads like a failure.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    debugpy = _import_debugpy()

    with _lock:
        if _listening is None:
            _check_port_free(listen)
            # Subprocesses of a quick-dev job are not the user's training code (a data
            # prep tool, git); debugging them would only slow them down.
            debugpy.configure(subProcess=False)
            # pydevd's modules are importable once debugpy is: tensors read by shape.
            import debugpy._vendored.force_pydevd

            from quickdev.job import tensor_view

            tensor_view.register()
            # The in-process adapter (pydevd speaking DAP itself) saves starting a second
            # Python process: about 0.4 s to the first breakpoint. Clients attach, detach
            # and attach again to it just the same.
            endpoint: Any = debugpy.listen(listen, in_process_debug_adapter=True)
            _listening = (str(endpoint[0]), int(endpoint[1]))
            log.info("debugpy listens on %s:%d", *_listening)
            _adapt_pydevd()
        address = _listening
    write_debugpy_file(run_dir, address)
    if wait_for_client:
        _wait_for_client(debugpy, client_timeout_s)
    return address


def _adapt_pydevd() -> None:
    """What the job asks of pydevd besides debugpy's options: Step Into lands in a module's
    forward (step_filter.py), and the time the script is held stopped is counted
    (debug_pauses.py). A pydevd without the hooks only loses these."""
    try:
        import pydevd

        py_db = pydevd.get_global_debugger()
        if py_db is None:
            log.warning("pydevd has no debugger yet: Step Into and pause counting as is")
            return
        from quickdev.job import debug_pauses, step_filter

        step_filter.install(py_db)
        debug_pauses.count_pauses(py_db)
    except Exception:
        log.exception("adapting pydevd failed; the debugger works as debugpy has it")


def _wait_for_client(debugpy: Any, timeout_s: float | None) -> None:
    timer = None
    if timeout_s is not None:
        timer = threading.Timer(timeout_s, debugpy.wait_for_client.cancel)
        timer.daemon = True
        timer.start()
    try:
        debugpy.wait_for_client()
    finally:
        if timer is not None:
            timer.cancel()
    if not debugpy.is_client_connected():
        log.warning("no debugger attached within %s s; stopping the job", timeout_s)
        raise StopJob(NO_CLIENT)


def _import_debugpy() -> Any:
    """The user's debugpy, else the one the language server lent (last on sys.path, so
    the lent directory's other libraries never shadow the user's)."""
    try:
        import debugpy
    except ImportError:
        lent = os.environ.get(DEBUGPY_PATH_ENV)
        if not lent:
            raise
        sys.path.append(lent)
        import debugpy
    return debugpy


def stop_at_failure(exc: BaseException) -> None:
    """Under a debugger, stop where the user's code failed, as an uncaught exception would.

    The job catches the script's exception to report it, so debugpy never sees it uncaught:
    the editor would stop only at the job's own exit (hidden by the session's rules) or not
    at all. debugpy's post-mortem stop respects the client's exception breakpoint settings;
    the traceback is cut after the user's innermost frame, so a torch error stops at the
    user's line that called torch. No client attached: nothing happens.
    """
    if _listening is None or exc.__traceback__ is None:
        return
    debugpy = _import_debugpy()

    from quickdev.limits.user_code import is_user_file

    entries: list[types.TracebackType] = []
    tb: types.TracebackType | None = exc.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    user = [i for i, e in enumerate(entries) if is_user_file(e.tb_frame.f_code.co_filename)]
    if user:
        entries = entries[: user[-1] + 1]
    cut: types.TracebackType | None = None
    for entry in reversed(entries):
        cut = types.TracebackType(cut, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    try:
        debugpy.trigger_exception_handler((type(exc), exc, cut))
    except Exception:
        log.exception("stopping the debugger at the failure failed")


def stop_at_nonfinite(found: NonFiniteFound) -> None:
    """Under a debugger, stop in the user's frame whose operation made the first NaN/Inf,
    with that frame's tensors in the Variables view.

    The hunt knows the origin only once the value reached the loss, a gradient or a
    parameter, so the frame has run on by then: it is shown as a post-mortem stop, as an
    exception raised there would be, whatever the client's exception filters (the person
    asked for this stop). No client attached: nothing happens.
    """
    if _listening is None or not found.frames:
        return
    debugpy = _import_debugpy()
    chain: types.TracebackType | None = None
    for frame, line in reversed(found.frames):
        chain = types.TracebackType(chain, frame, frame.f_lasti, line)
    try:
        debugpy.trigger_exception_handler((type(found), found, chain), as_uncaught=False)
    except Exception:
        log.exception("stopping the debugger at the first non-finite value failed")


def _check_port_free(listen: tuple[str, int]) -> None:
    """Fail with a clear message now: pydevd binds in a background thread, where a taken
    port is only logged and the job would wait for a client that can never connect."""
    host, port = listen
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # The same option pydevd sets, so a port in TIME_WAIT counts as free for both.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise DebuggerError(
                f"debugpy cannot listen on {host}:{port} ({exc.strerror or exc}); "
                "pick another port, or port 0 for a free one"
            ) from None


def write_debugpy_file(run_dir: Path, address: tuple[str, int]) -> Path:
    """``{"host", "port", "pid"}``, replaced atomically so a poller never reads half a file."""
    data = {"host": address[0], "port": address[1], "pid": os.getpid()}
    return write_json(run_dir / DEBUGPY_FILE, data)
