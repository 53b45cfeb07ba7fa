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
        "limits": {"one_epoch_options": ["--epochs"]},
        "loaders": [{"origin": "loop.py:3", "batches": 2}],
        "losses": [0.5],
        "error": {"type": "ValueError", "message": "bad", "file": "loop.py", "line": 3},
    }
    good_dir = write_run(workspace, "good", json.dumps(good))
    write_run(workspace, "not-json", "{half a file")
    write_run(workspace, "wrong-types", json.dumps({**good, "id": "x", "losses": "many"}))
    write_run(workspace, "bad-status", json.dumps({**good, "id": "y", "status": "great"}))
    write_run(workspace, "a-list", "[1, 2]")
    write_run(workspace, "empty-list", "[]")
    write_run(workspace, "number-id", json.dumps({**good, "id": 7}))
    write_run(workspace, "string-batches", json.dumps({**good, "id": "z", "loaders": [
        {"origin": "loop.py:3", "batches": "two"}]}))  # fmt: skip
    write_run(workspace, "truncated", json.dumps(good)[:-40])

    listed = await execute(client, "quickdev.listRuns", {})
    (summary,) = listed["runs"]
    assert summary == {
        "runId": "good",
        "script": str(workspace / "loop.py"),
        "args": [],
        "mode": "run",
        "status": "failed",
        "started": "2026-01-02T03:04:05+00:00",
        "runDir": str(good_dir),
        "resultFile": str(good_dir / "result.json"),
        "outputFile": str(good_dir / "output.log"),
        "durationS": 1.5,
        "batches": 2,
        "losses": [0.5],
        "changes": ["one epoch: --epochs set to 1 (pass it explicitly to keep your value)"],
        "verdict": [],
        "error": {"message": "ValueError: bad", "file": "loop.py", "line": 3},
    }

    answer = await execute(client, "quickdev.getRun", {"runId": "wrong-types"})
    assert "the result of run wrong-types cannot be read" in answer["error"]
    assert "\n" not in answer["error"]
    answer = await execute(client, "quickdev.getRun", {"runId": "good"})
    assert answer["run"] == summary
    assert answer["result"] == good


async def test_run_ids_that_are_paths_are_refused(
    client: LanguageClient, workspace: Path, tmp_path: Path
) -> None:
    """An id from a client or a result file is used as a path: only plain names pass."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "result.json").write_text("{}", encoding="utf-8")
    for run_id in (str(outside), "../outside", "..", "a/b"):
        for command in ("quickdev.getRun", "quickdev.attachJob"):
            answer = await execute(client, command, {"runId": run_id})
            assert "must be the name of a run directory" in answer["error"], (command, answer)
    # A result whose id claims to be elsewhere is listed under its directory's name.
    good = {"schema": 1, "id": "/etc", "status": "passed", "script": "t.py",
            "started": "2026-01-02T03:04:05+00:00", "duration_s": 1.0}  # fmt: skip
    write_run(workspace, "plain", json.dumps(good))
    listed = await execute(client, "quickdev.listRuns", {})
    assert [run["runId"] for run in listed["runs"]] == ["plain"]
