"""The memory forecast through the real server: the lens starts a forecast job, the run's
summary carries its one line, and the script's lens then shows it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from tests.support.server import (
    TRAIN_SCRIPT,
    collect_run_changes,
    execute,
    final,
    lenses,
    open_document,
    server_pid,
    torch_loaded_in,
    wait_for,
)

pytestmark = pytest.mark.asyncio


async def _memory_lens_title(client: LanguageClient, document_uri: str) -> tuple[str, dict]:
    found = await lenses(client, document_uri)
    lens = next(
        x for x in found if x.command and x.command.command == "quickdev.lens.memoryForecast"
    )
    assert lens.command is not None
    return lens.command.title, dict((lens.command.arguments or [{}])[0])


async def test_the_lens_shows_the_scripts_newest_forecast(
    client: LanguageClient, workspace: Path
) -> None:
    script = workspace / "train me.py"
    script.write_text(TRAIN_SCRIPT)
    changes = collect_run_changes(client)
    document_uri = open_document(client, script)
    title, argument = await _memory_lens_title(client, document_uri)
    assert title == "Memory forecast" and argument == {"script": str(script)}

    answer = await execute(
        client, "quickdev.startJob", {**argument, "mode": "run", "memoryForecast": "24,h100"}
    )
    assert "error" not in answer, answer
    done = await wait_for(lambda: final(changes, answer["runId"]), "the forecast run to end")
    assert done["status"] == "passed", done
    assert done["memoryForecast"].startswith("≈ ") and done["memoryForecast"].endswith(
        " peak · fits 24 GB"
    )
    refreshed = client.lens_refreshes  # type: ignore[attr-defined]
    assert refreshed >= 1, "the editor was not asked to show the new forecast"
    title, _ = await _memory_lens_title(client, document_uri)
    assert title == done["memoryForecast"]
    assert not torch_loaded_in(server_pid(client))


async def test_a_device_that_names_no_size_is_refused_in_one_line(
    client: LanguageClient, workspace: Path
) -> None:
    script = workspace / "loop.py"
    answer = await execute(
        client, "quickdev.startJob", {"script": str(script), "memoryForecast": "huge"}
    )
    assert answer["error"].startswith("\"memoryForecast\": 'huge' is not a size in GB")
    assert "\n" not in answer["error"]
