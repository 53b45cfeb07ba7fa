"""``quickdev.openTensorBoard``: start or reuse TensorBoard for a runs directory.

The TensorBoard manager (``quickdev.tensorboard.manager``) does the work; it blocks while
TensorBoard starts, so it runs in a thread. TensorBoard runs with the job interpreter, which
is where the profile extra (tensorboard, torch-tb-profiler) is installed. Servers started
here stop when this server shuts down or exits.
"""

from __future__ import annotations

import asyncio
import atexit
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from quickdev.rundir.result import read_result
from quickdev.server.app import QuickdevServer
from quickdev.server.commands import Answer, CommandError, register, string_field
from quickdev.server.log import log
from quickdev.server.runs import runs_state

if TYPE_CHECKING:
    from quickdev.tensorboard.manager import TensorBoardOwner


class Boards:
    """One owner per interpreter, so every server started here can be stopped."""

    def __init__(self) -> None:
        self._owners: dict[str, TensorBoardOwner] = {}

    def owner(self, python: str) -> TensorBoardOwner:
        # Imported on first use: it pulls in urllib, which would slow every server start.
        from quickdev.tensorboard.manager import TensorBoardOwner

        if python not in self._owners:
            self._owners[python] = TensorBoardOwner(python)
        return self._owners[python]

    def stop_all(self) -> None:
        for owner in list(self._owners.values()):  # a copy: an open may add one meanwhile
            try:
                owner.stop_all()
            except Exception:
                log.exception("stopping TensorBoard failed")


def setup(server: QuickdevServer) -> None:
    boards = Boards()
    server.state.tensorboards = boards
    atexit.register(boards.stop_all)
    register(server, "quickdev.openTensorBoard", open_tensorboard)

    @server.feature(types.EXIT)
    def on_exit(ls: QuickdevServer, params: None) -> None:
        boards.stop_all()


async def open_tensorboard(ls: QuickdevServer, argument: dict[str, Any]) -> Answer:
    boards = ls.state.tensorboards
    assert isinstance(boards, Boards)
    run_id = string_field(argument, "runId")
    logdir, run_dir = _logdir(ls, run_id)
    python = ls.state.settings.python or sys.executable
    from quickdev.tensorboard.manager import TensorBoardError

    try:
        board = await asyncio.to_thread(boards.owner(python).ensure, logdir)
    except TensorBoardError as exc:
        raise CommandError(str(exc)) from None
    answer: Answer = {"url": board.url, "pid": board.pid}
    if run_dir is not None:
        answer["run"] = _plugin_run_name(logdir, run_dir)
    return answer


def _logdir(ls: QuickdevServer, run_id: str | None) -> tuple[Path, Path | None]:
    """The runs root to serve (TensorBoard shows every run in it), and the run's directory."""
    if run_id is None:
        folders = ls.workspace_folders()
        if not folders:
            raise CommandError("open a folder first: TensorBoard shows its runs directory")
        return ls.runs_dir_for(folders[0]), None
    runs = runs_state(ls)
    run = runs.jobs.runs.get(run_id)
    run_dir = run.run_dir if run is not None else runs.find_run_dir(run_id)
    if run_dir is None:
        raise CommandError(f"no run {run_id} in this session or the runs directories")
    return run_dir.parent, run_dir


def _plugin_run_name(logdir: Path, run_dir: Path) -> str:
    """The profiler plugin names a run after the folder holding its traces, from the logdir."""
    result = read_result(run_dir)
    profile = result.profile if result is not None else None
    if profile is not None and profile.trace_files:
        trace = Path(profile.trace_files[0])
        trace = trace if trace.is_absolute() else run_dir / trace
        if trace.parent.is_relative_to(logdir):
            return trace.parent.relative_to(logdir).as_posix()
    return run_dir.name
