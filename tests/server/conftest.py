"""The real language server (``python -m quickdev serve``) over stdio, driven by pytest-lsp.

Workspaces live in a folder whose name has spaces and non-ASCII letters, as users' do.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.support.server import SERVER, uri

SAMPLES = Path(__file__).parent.parent / "analysis" / "samples"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "my wörkspace ü"
    (folder / "models").mkdir(parents=True)
    shutil.copy(SAMPLES / "lit_mnist.py", folder / "train lit.py")
    shutil.copy(SAMPLES / "plain_loop.py", folder / "loop.py")
    (folder / "models" / "backbone.py").write_text(
        "import torch.nn as nn\n\n\nclass Backbone(nn.Module):\n"
        "    def forward(self, x):\n        return x\n"
    )
    return folder


@pytest.fixture
def settings() -> dict[str, Any]:
    """Initialization options; a test overrides this fixture to change them."""
    return {"quickdev": {}}


@pytest_lsp.fixture(config=SERVER)
async def client(
    lsp_client: LanguageClient, workspace: Path, settings: dict[str, Any]
) -> AsyncIterator[None]:
    # VS Code re-requests lenses and inlay hints when asked to; this client counts the
    # requests.
    lsp_client.lens_refreshes = 0  # type: ignore[attr-defined]
    lsp_client.hint_refreshes = 0  # type: ignore[attr-defined]

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def count_refresh(*_: object) -> None:
        lsp_client.lens_refreshes += 1  # type: ignore[attr-defined]

    @lsp_client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def count_hint_refresh(*_: object) -> None:
        lsp_client.hint_refreshes += 1  # type: ignore[attr-defined]

    capabilities = client_capabilities("visual-studio-code")
    # pytest-lsp's record of VS Code's capabilities predates inlay hints; the extension's
    # language client (vscode-languageclient 9) declares their refresh support.
    assert capabilities.workspace is not None
    capabilities.workspace.inlay_hint = types.InlayHintWorkspaceClientCapabilities(
        refresh_support=True
    )
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            workspace_folders=[types.WorkspaceFolder(uri=uri(workspace), name=workspace.name)],
            initialization_options=settings,
        )
    )
    yield
    await lsp_client.shutdown_session()
