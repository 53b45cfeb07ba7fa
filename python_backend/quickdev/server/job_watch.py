"""Following one running job to its end: its progress and debugger address, read from the
files it writes, and its result once its process exits. No LSP here.

The process's exit is an event (a thread waits for it); the files, written by another
process, are polled while it runs. ``on_change`` is called whenever the run's summary
changes, last of all when the run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

from quickdev.processes import EXIT_QUICKDEV_ERROR
from quickdev.rundir.killed import settle_run
from quickdev.rundir.layout import DEBUGPY_FILE, LAUNCH_LOG, PROGRESS_FILE
from quickdev.rundir.validate import InvalidData, read_json, read_result_checked
from quickdev.server.log import log
from quickdev.server.run_state import JobProcess, Listening, Progress, Run, RunStatus
from quickdev.server.types import Failure

POLL_S = 0.1

OnChange = Callable[[Run], None]


def watch(run: Run, process: JobProcess, on_change: OnChange) -> asyncio.Task[None]:
    """Follow ``run`` on the running loop until it ended (call from the event loop)."""
    loop = asyncio.get_running_loop()
    exited = asyncio.Event()
    _notify_exit(process, loop, exited)
    return loop.create_task(_watch(run, process, exited, on_change))


async def _watch(run: Run, process: JobProcess, exited: asyncio.Event, on_change: OnChange) -> None:
    try:
        await _follow(run, process, exited, on_change)
    except Exception:
        # A watcher that dies would leave the run "running" forever.
        log.exception("watching run %s failed", run.run_id)
        if not run.finished.is_set():
            run.status = "failed"
            run.failure = Failure("the server lost track of this run")
            run.finished.set()
            run.attach_settled.set()


async def _follow(
    run: Run, process: JobProcess, exited: asyncio.Event, on_change: OnChange
) -> None:
    progress_stamp: float | None = None
    while not exited.is_set():
        stamp = _mtime(run.run_dir / PROGRESS_FILE)
        if stamp is not None and stamp != progress_stamp:
            progress_stamp = stamp
            if _read_progress(run):
                on_change(run)
        if run.attach is None and run.request.mode == "debug":
            run.attach = _read_listening(run.run_dir)
            if run.attach is not None:
                run.attach_settled.set()
                on_change(run)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(exited.wait(), POLL_S)
    _finish(run, process.wait(), on_change)


def _read_progress(run: Run) -> bool:
    try:
        progress = read_json(run.run_dir / PROGRESS_FILE, Progress)
    except (OSError, InvalidData) as exc:
        log.debug("run %s: no progress read: %s", run.run_id, exc)
        return False
    before = (run.stage, run.batches_done, run.steps)
    run.stage = progress.stage if progress.stage is not None else run.stage
    run.batches_done = progress.batches if progress.batches is not None else run.batches_done
    run.steps = progress.steps if progress.steps is not None else run.steps
    return before != (run.stage, run.batches_done, run.steps)


def _finish(run: Run, returncode: int, on_change: OnChange) -> None:
    _read_progress(run)
    if returncode < 0:  # died of a signal, maybe before writing its end: say which
        settle_run(run.run_dir, exit_signal=-returncode)
    run.result = read_result_checked(run.run_dir)
    if run.status != "cancelled":
        run.status = _final_status(run, returncode)
    run.stage = "done"
    run.ended = time.time()
    if run.status == "failed":
        run.failure = _failure(run, returncode)
    run.finished.set()
    run.attach_settled.set()
    log.info("run %s ended: %s (exit %s)", run.run_id, run.status, returncode)
    # Listeners run last: the run is complete even if one of them fails.
    on_change(run)


def _final_status(run: Run, returncode: int) -> RunStatus:
    result = run.result
    if result is not None and result.status != "running":
        return result.status
    if returncode < 0:
        return "killed"
    if returncode == EXIT_QUICKDEV_ERROR:
        return "error"
    return "passed" if returncode == 0 else "failed"


def _failure(run: Run, returncode: int) -> Failure:
    error = run.result.error if run.result else None
    if error is not None:
        return Failure.of_error(error)
    return Failure(explain_early_exit(run, returncode))


def explain_early_exit(run: Run, returncode: int) -> str:
    """One line for a job that died before writing its result (usually its environment):
    what the job process printed before and around the job, in its launch log."""
    text = ""
    with contextlib.suppress(OSError):
        text = (run.run_dir / LAUNCH_LOG).read_text(encoding="utf-8", errors="replace")
    interpreter = run.request.interpreter
    missing = re.findall(r"No module named '([^']+)'", text)
    if missing:
        return (
            f"the job interpreter {interpreter} has no module '{missing[-1]}'; install it "
            "there or set quickdev.python to an interpreter that has it"
        )
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = lines[-1] if lines else "no output"
    return f"the job exited with status {returncode} before writing its result: {last}"


def _notify_exit(
    process: JobProcess, loop: asyncio.AbstractEventLoop, exited: asyncio.Event
) -> None:
    """Set ``exited`` (on the loop) when the process ends: a thread blocks in wait() for it."""

    def wait() -> None:
        process.wait()
        with contextlib.suppress(RuntimeError):  # the loop closed first: the server exits
            loop.call_soon_threadsafe(exited.set)

    threading.Thread(target=wait, name=f"wait-{process.pid}", daemon=True).start()


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime_ns / 1e9
    except OSError:
        return None


def _read_listening(run_dir: Path) -> Listening | None:
    try:
        return read_json(run_dir / DEBUGPY_FILE, Listening)
    except (OSError, InvalidData):
        return None  # not written yet, or half of it
