"""``quickdev.openTensorBoard``: start or reuse TensorBoard for a runs directory.

The TensorBoard manager (``quickdev.tensorboard``) does the work; it blocks while
TensorBoard starts, so it runs in a thread. Servers started here stop when this server exits.
"""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from typing import Any

from quickdev.server.app import QuickdevServer
from quickdev.server.commands import Answer, CommandError, register, string_field
from quickdev.server.runs import runs_state


def setup(server: QuickdevServer) -> None:
    register(server, "quickdev.openTensorBoard", open_tensorboard)


async def open_tensorboard(ls: QuickdevServer, argument: dict[str, Any]) -> Answer:
    run_id = string_field(argument, "runId")
    logdir = _logdir(ls, run_id)
    ensure = _manager_entry_point()
    board = await asyncio.to_thread(ensure, logdir)
    answer: Answer = {"url": str(board.url), "pid": int(board.pid)}
    if run_id is not None:
        answer["run"] = run_id
    return answer


def _logdir(ls: QuickdevServer, run_id: str | None) -> Path:
    runs = runs_state(ls)
    if run_id is None:
        folders = ls.workspace_folders()
        if not folders:
            raise CommandError("open a folder first: TensorBoard shows its runs directory")
        return ls.runs_dir_for(folders[0])
    run = runs.jobs.runs.get(run_id)
    run_dir = run.run_dir if run is not None else runs.find_run_dir(run_id)
    if run_dir is None:
        raise CommandError(f"no run {run_id} in this session or the runs directories")
    return run_dir.parent


def _manager_entry_point() -> Any:
    try:
        module = importlib.import_module("quickdev.tensorboard.manager")
        return module.ensure_tensorboard
    except (ImportError, AttributeError):
        raise CommandError(
            "TensorBoard support is not installed in this quickdev version; "
            "run `quickdev tensorboard --logdir DIR` from a terminal instead"
        ) from None
