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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from quickdev.rundir.layout import SOURCE_ROOTS_FILE
from quickdev.server.app import QuickdevServer
from quickdev.server.commands import CommandError, problem, register
from quickdev.server.log import log
from quickdev.server.protocol import TensorBoardAnswer
from quickdev.server.runs import FoundRun, runs_of
from quickdev.server.types import Key

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


BOARDS = Key("tensorboards", Boards)


@dataclass(frozen=True)
class OpenTensorBoard:
    runId: str | None = field(default=None, metadata=problem('"runId" must be a run id'))


def setup(server: QuickdevServer) -> None:
    boards = Boards()
    server.state.put(BOARDS, boards)
    atexit.register(boards.stop_all)
    register(server, "quickdev.openTensorBoard", OpenTensorBoard, open_tensorboard)

    @server.feature(types.EXIT)
    def on_exit(ls: QuickdevServer, params: None) -> None:
        boards.stop_all()


async def open_tensorboard(ls: QuickdevServer, wanted: OpenTensorBoard) -> TensorBoardAnswer:
    boards = ls.state.get(BOARDS)
    run_id = wanted.runId
    found = runs_of(ls).find(run_id) if run_id is not None else None
    logdir = found.run_dir.parent if found is not None else _runs_root(ls)
    python = ls.state.settings.python or sys.executable
    from quickdev.tensorboard.manager import TensorBoardError

    try:
        board = await asyncio.to_thread(boards.owner(python).ensure, logdir)
    except TensorBoardError as exc:
        raise CommandError(str(exc)) from None
    answer: TensorBoardAnswer = {"url": board.url, "pid": board.pid}
    if found is not None:
        answer["run"] = _plugin_run_name(logdir, found)
    return answer


def _runs_root(ls: QuickdevServer) -> Path:
    """Without a run: the runs directory of the newest profiled run in any folder (runs go
    to each script's folder), else the first folder's (TensorBoard shows every run in it)."""
    runs_dirs = [d for d in runs_of(ls).known_runs_dirs() if d.is_dir()]
    profiled = [
        run_dir
        for runs_dir in runs_dirs
        for run_dir in runs_dir.iterdir()
        if (run_dir / SOURCE_ROOTS_FILE).is_file()
    ]
    if profiled:
        # Run ids begin with their start time.
        return max(profiled, key=lambda run_dir: run_dir.name).parent
    folders = ls.workspace_folders()
    if not folders:
        raise CommandError("open a folder first: TensorBoard shows its runs directory")
    return ls.runs_dir_for(folders[0])


def _plugin_run_name(logdir: Path, found: FoundRun) -> str:
    """The profiler plugin names a run after the folder holding its traces, from the logdir."""
    result = found.result()
    profile = result.profile if result is not None else None
    if profile is not None and profile.trace_files:
        trace = Path(profile.trace_files[0])
        trace = trace if trace.is_absolute() else found.run_dir / trace
        if trace.parent.is_relative_to(logdir):
            return trace.parent.relative_to(logdir).as_posix()
    return found.run_dir.name
