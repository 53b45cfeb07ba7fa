"""A server started on run directories whose records name a live process that is not
provably their job (a copied folder, a run of an earlier quickdev, a reused PID): it lists
them as killed and refuses to cancel or attach in one line, and that process lives on."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from tests.support.server import execute
from tests.support.strangers import KINDS, still_running, stranger_run

pytestmark = pytest.mark.asyncio


@pytest.fixture
def strangers() -> list[subprocess.Popen[bytes]]:
    return []


@pytest.fixture
def workspace(workspace: Path, strangers: list[subprocess.Popen[bytes]]) -> Path:
    """The records are on disk before the server starts, as for a restarted server."""
    for kind in KINDS:
        stranger_run(workspace / ".quickdev" / "runs", kind, strangers)
    return workspace


@pytest.fixture(autouse=True)
def end_strangers(strangers: list[subprocess.Popen[bytes]]) -> object:
    yield
    for proc in strangers:
        proc.kill()
        proc.wait()


async def test_a_restarted_server_never_signals_a_process_its_records_cannot_prove(
    client: LanguageClient, workspace: Path, strangers: list[subprocess.Popen[bytes]]
) -> None:
    listed = await execute(client, "quickdev.listRuns", {})
    statuses = {run["runId"]: run["status"] for run in listed["runs"]}
    run_ids = [kind.replace(" ", "-") for kind in KINDS]
    assert {run_id: statuses.get(run_id) for run_id in run_ids} == dict.fromkeys(run_ids, "killed")
    for run_id, sleeper in zip(run_ids, strangers, strict=True):
        for command in ("quickdev.cancelJob", "quickdev.attachJob"):
            answer = await execute(client, command, {"runId": run_id})
            error = answer.get("error", "")
            assert f"PID {sleeper.pid}" in error and "\n" not in error, (command, answer)
        assert still_running(sleeper), f"{run_id}: the unrelated process was signalled"
