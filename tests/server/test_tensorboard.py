"""``quickdev.openTensorBoard`` on a profiled run: the real TensorBoard and profiler plugin.

The server owns the TensorBoard it started: shutting the server down stops it.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.support.server import (
    SERVER,
    TRAIN_SCRIPT,
    collect_run_changes,
    execute,
    final,
    uri,
    wait_for,
)

pytestmark = pytest.mark.asyncio

PLUGIN_RUNS = "data/plugin/pytorch_profiler/runs"


def plugin_runs(url: str) -> list[str]:
    try:
        with urllib.request.urlopen(url + PLUGIN_RUNS, timeout=10) as answer:
            return list(json.loads(answer.read())["runs"])
    except OSError:
        return []


async def test_profiled_run_opens_in_tensorboard_which_stops_with_the_server(
    workspace: Path,
) -> None:
    script = workspace / "train me.py"
    script.write_text(TRAIN_SCRIPT)
    client = await SERVER.start()
    assert isinstance(client, LanguageClient)
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(uri=uri(workspace), name="ws")],
        )
    )
    try:
        changes = collect_run_changes(client)
        started = await execute(
            client, "quickdev.startJob", {"script": str(script), "mode": "profile"}
        )
        run_id = started["runId"]
        done = await wait_for(lambda: final(changes, run_id), "the profiled run")
        assert done["status"] == "passed", done
        assert done["mode"] == "profile"

        board = await execute(client, "quickdev.openTensorBoard", {"runId": run_id})
        assert "error" not in board, board
        assert board["url"].startswith("http://127.0.0.1:")
        url = board["url"] if board["url"].endswith("/") else board["url"] + "/"
        listed = await wait_for(
            lambda: board["run"] in plugin_runs(url) and plugin_runs(url),
            "the profiler plugin to list the run",
        )
        assert board["run"].startswith(run_id)
        assert listed

        again = await execute(client, "quickdev.openTensorBoard", {})
        assert again["pid"] == board["pid"]  # one TensorBoard per runs directory, reused
    finally:
        await client.shutdown_session()
        await client.stop()
    await wait_for(lambda: not Path(f"/proc/{board['pid']}").exists(), "TensorBoard to stop")


async def test_unknown_run(client: LanguageClient) -> None:
    answer = await execute(client, "quickdev.openTensorBoard", {"runId": "nope"})
    assert "no run nope" in answer["error"]
