"""``quickdev.deleteRun``: the Runs view's Delete. A running run is refused; a finished one
leaves the disk and the list."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from tests.support.server import TRAIN_SCRIPT, collect_run_changes, execute, final, wait_for

pytestmark = pytest.mark.asyncio


async def test_delete_refuses_a_running_run_and_removes_a_finished_one(
    client: LanguageClient, workspace: Path
) -> None:
    script = workspace / "slow.py"
    script.write_text(TRAIN_SCRIPT)
    changes = collect_run_changes(client)
    started = await execute(
        client, "quickdev.startJob", {"script": str(script), "args": ["--delay", "0.3"]}
    )
    run_id, run_dir = started["runId"], Path(started["runDir"])

    refused = await execute(client, "quickdev.deleteRun", {"runId": run_id})
    assert refused == {"error": f"run {run_id} is still running; cancel it first"}
    assert run_dir.is_dir()

    await execute(client, "quickdev.cancelJob", {"runId": run_id})
    await wait_for(lambda: final(changes, run_id), "the cancelled run to end")
    assert await execute(client, "quickdev.deleteRun", {"runId": run_id}) == {"deleted": run_id}
    assert not run_dir.exists()
    listed = await execute(client, "quickdev.listRuns", {})
    assert run_id not in [run["runId"] for run in listed["runs"]]

    again = await execute(client, "quickdev.deleteRun", {"runId": run_id})
    assert again["error"].startswith(f"no run {run_id}")
    bad = await execute(client, "quickdev.deleteRun", {"runId": 7})
    assert bad == {"error": '"runId" must be a run id, got 7'}
