"""Helpers for driving the real server from tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient


def uri(path: Path) -> str:
    result = from_fs_path(str(path))
    assert result is not None
    return result


def open_document(client: LanguageClient, path: Path, text: str | None = None) -> str:
    document_uri = uri(path)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=document_uri,
                language_id="python",
                version=1,
                text=path.read_text(encoding="utf-8") if text is None else text,
            )
        )
    )
    return document_uri


async def lenses(client: LanguageClient, document_uri: str) -> list[types.CodeLens]:
    result = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=document_uri))
    )
    return list(result or [])


async def execute(client: LanguageClient, command: str, argument: dict[str, Any]) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=[argument])
    )


def server_pid(client: LanguageClient) -> int:
    process = client._server  # the server's subprocess, which pytest-lsp started
    assert process is not None
    return process.pid


def torch_loaded_in(pid: int) -> bool:
    """Whether torch's native library is mapped into the process (Linux)."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return "libtorch" in maps or "torch/_C" in maps
