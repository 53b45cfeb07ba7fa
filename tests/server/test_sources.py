"""A multi-root workspace: a profiled run of the SECOND folder's script.

A profiler frame's file resolves through that run's recorded source roots (its own folder,
not the first folder's file of the same name; torch's files in the job interpreter's
site-packages), and TensorBoard opened without a run serves the runs of that folder.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
import torch
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.server.test_tensorboard import plugin_runs
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


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    vision, text = tmp_path / "vision", tmp_path / "text"
    for folder in (vision, text):
        folder.mkdir()
        # Both folders hold a train.py, as projects kept side by side do.
        (folder / "train.py").write_text(TRAIN_SCRIPT)
    return vision, text


@pytest_lsp.fixture(config=SERVER)
async def two_folders(
    lsp_client: LanguageClient, folders: tuple[Path, Path]
) -> AsyncIterator[None]:
    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def refresh(*_: object) -> None:
        """VS Code answers it; nothing to do here."""

    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(uri=uri(f), name=f.name) for f in folders],
        )
    )
    yield
    await lsp_client.shutdown_session()


async def test_second_folders_profile_resolves_its_frames_and_opens_in_tensorboard(
    two_folders: LanguageClient, folders: tuple[Path, Path]
) -> None:
    client = two_folders
    vision, text = folders
    changes = collect_run_changes(client)
    started = await execute(
        client, "quickdev.startJob", {"script": str(text / "train.py"), "mode": "profile"}
    )
    run_id = started["runId"]
    done = await wait_for(lambda: final(changes, run_id), "the profiled run")
    assert done["status"] == "passed", done
    assert Path(done["runDir"]).is_relative_to(text)

    # A frame names its file relative to the job's sys.path.
    mine = await execute(
        client, "quickdev.resolveSource", {"filename": "train.py", "runId": run_id}
    )
    assert mine == {"path": str((text / "train.py").resolve())}
    torch_frame = {"filename": "torch/nn/modules/linear.py", "runId": run_id}
    answer = await execute(client, "quickdev.resolveSource", torch_frame)
    # The job interpreter is this one (no python setting): its site-packages hold torch.
    linear = Path(torch.__file__).parent / "nn" / "modules" / "linear.py"
    assert answer == {"path": str(linear.resolve())}

    # Without the run, torch frames still resolve through the roots runs recorded.
    answer = await execute(client, "quickdev.resolveSource", {"filename": torch_frame["filename"]})
    assert answer["path"].endswith("torch/nn/modules/linear.py")

    missing = await execute(client, "quickdev.resolveSource", {"filename": "gone.py"})
    assert missing["error"].startswith("gone.py is in none of the run's source roots")
    bad = await execute(client, "quickdev.resolveSource", {"filename": 3})
    assert "filename" in bad["error"]

    # The newest profiled run is in the second folder: TensorBoard serves that folder's runs.
    board = await execute(client, "quickdev.openTensorBoard", {})
    assert "error" not in board, board
    url = board["url"] if board["url"].endswith("/") else board["url"] + "/"
    listed = await wait_for(lambda: plugin_runs(url), "the profiler plugin to list runs")
    assert any(name.startswith(run_id) for name in listed), listed
    assert not (vision / ".quickdev").exists()
