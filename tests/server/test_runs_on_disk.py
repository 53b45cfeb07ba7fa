"""Runs found on disk: a malformed result.json is skipped by listRuns, not fatal to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from tests.support.server import execute

pytestmark = pytest.mark.asyncio


def write_run(workspace: Path, run_id: str, text: str) -> Path:
    run_dir = workspace / ".quickdev" / "runs" / run_id
    run_dir.mkdir(parents=True)
    (run_dir / "result.json").write_text(text, encoding="utf-8")
    return run_dir


async def test_malformed_results_are_skipped(client: LanguageClient, workspace: Path) -> None:
    good = {
        "schema": 1,
        "id": "good",
        "status": "failed",
        "script": str(workspace / "loop.py"),
        "started": "2026-01-02T03:04:05+00:00",
        "duration_s": 1.5,
        "loaders": [{"origin": "loop.py:3", "batches": 2}],
        "losses": [0.5],
        "error": {"type": "ValueError", "message": "bad", "file": "loop.py", "line": 3},
    }
    good_dir = write_run(workspace, "good", json.dumps(good))
    write_run(workspace, "not-json", "{half a file")
    write_run(workspace, "wrong-types", json.dumps({**good, "id": "x", "losses": "many"}))
    write_run(workspace, "bad-status", json.dumps({**good, "id": "y", "status": "great"}))
    write_run(workspace, "a-list", "[1, 2]")

    listed = await execute(client, "quickdev.listRuns", {})
    (summary,) = listed["runs"]
    assert summary == {
        "runId": "good",
        "script": str(workspace / "loop.py"),
        "mode": "run",
        "status": "failed",
        "started": "2026-01-02T03:04:05+00:00",
        "runDir": str(good_dir),
        "resultFile": str(good_dir / "result.json"),
        "outputFile": str(good_dir / "output.log"),
        "durationS": 1.5,
        "batches": 2,
        "losses": [0.5],
        "error": {"message": "ValueError: bad", "file": "loop.py", "line": 3},
    }

    answer = await execute(client, "quickdev.getRun", {"runId": "wrong-types"})
    assert "the result of run wrong-types cannot be read" in answer["error"]
    assert "\n" not in answer["error"]
    answer = await execute(client, "quickdev.getRun", {"runId": "good"})
    assert answer["run"] == summary
    assert answer["result"] == good
