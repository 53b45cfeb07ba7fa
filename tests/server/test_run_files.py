"""``quickdev.deleteRun`` and, at start, finishing the restore of a killed job's files."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient
from quickdev.limits import journal
from quickdev.limits.patching import Patcher
from quickdev.rundir.ids import create_run_dir
from quickdev.rundir.layout import JOURNAL_DONE

from tests.support.server import execute

pytestmark = pytest.mark.asyncio


def killed_job(folder: Path) -> Path:
    """A real journal that a job left behind: it changed ``model.pt`` and never ended."""
    (folder / "model.pt").write_bytes(b"the user's model")
    run_dir = create_run_dir(folder / ".quickdev" / "runs", "20260101-000000-killed-0000")
    (run_dir / "result.json").write_text(json.dumps({"schema": 1, "id": run_dir.name}))
    cwd = os.getcwd()
    os.chdir(folder)
    patcher = Patcher()
    try:
        session = journal.install(patcher, run_dir)
        (folder / "model.pt").write_bytes(b"half a checkpoint")
    finally:
        patcher.undo_all()  # the hook goes quiet; the journal is never finished
        if session.watcher is not None:
            session.watcher.stop()  # its thread dies with the process, before the log closes
        session.log.close()  # the kernel drops the lock, as when the process dies
        os.chdir(cwd)
    return run_dir


@pytest.fixture
def workspace(workspace: Path) -> Path:
    killed_job(workspace)
    return workspace


async def test_the_server_restores_a_killed_jobs_files_at_start(
    client: LanguageClient, workspace: Path
) -> None:
    deadline = asyncio.get_running_loop().time() + 30
    while not any("put back" in m.message for m in client.messages):
        assert asyncio.get_running_loop().time() < deadline, client.messages
        await asyncio.sleep(0.05)
    (line,) = [m.message for m in client.messages if "put back" in m.message]
    assert "killed run 20260101-000000-killed-0000" in line and "\n" not in line
    assert (workspace / "model.pt").read_bytes() == b"the user's model"
    run_dir = workspace / ".quickdev" / "runs" / "20260101-000000-killed-0000"
    assert (run_dir / "outputs" / "model.pt").read_bytes() == b"half a checkpoint"
    assert (run_dir / JOURNAL_DONE).is_file()


async def test_delete_run_removes_a_finished_run_and_refuses_a_running_one(
    client: LanguageClient, workspace: Path
) -> None:
    runs = workspace / ".quickdev" / "runs"
    finished = create_run_dir(runs, "finished")
    (finished / "result.json").write_text(
        json.dumps({"schema": 1, "id": "finished", "status": "passed"})
    )
    running = create_run_dir(runs, "running")
    (running / "result.json").write_text(
        json.dumps({"schema": 1, "id": "running", "status": "running"})
    )

    assert await execute(client, "quickdev.deleteRun", {"runId": "finished"}) == {
        "deleted": "finished"
    }
    assert not finished.exists()
    answer = await execute(client, "quickdev.deleteRun", {"runId": "running"})
    assert answer == {"error": "run running is still running; cancel it first"}
    assert running.is_dir()
    answer = await execute(client, "quickdev.deleteRun", {"runId": 3})
    assert "runId" in answer["error"]
