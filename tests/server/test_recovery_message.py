"""The person in the editor hears that a killed run's files were put back.

The editor starts the server in the first workspace folder (``extension/server/server.ts``),
so the server's own command line once finished the restore before the server was up and
said it on stderr, which the person never reads; the server, finding nothing left, said
nothing. The server is started here as the editor starts it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient
from quickdev.rundir.layout import JOURNAL_DONE

from tests.server.test_run_files import killed_job

pytestmark = pytest.mark.asyncio


@pytest.fixture(autouse=True)
def server_in_workspace(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the server starts (autouse fixtures come first): a killed job's files, and
    the workspace as the working folder the server process starts in."""
    killed_job(workspace)
    monkeypatch.chdir(workspace)


async def test_a_server_started_in_the_workspace_says_what_it_put_back(
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
    assert (run_dir / JOURNAL_DONE).is_file()
