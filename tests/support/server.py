"""Helpers for driving the real server from tests."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

# The real server, as the extension starts it.
SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "quickdev", "serve"])


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


DEADLINE_S = 120.0

# A small training script: --crash fails in the loop, --delay makes batches slow.
TRAIN_SCRIPT = """\
import argparse
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    def __init__(self, delay):
        self.delay = delay

    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(self.delay)
        return torch.randn(4), torch.randn(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--crash", action="store_true")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--pid-file")
    args = parser.parse_args()
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write(str(os.getpid()))
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        for x, y in DataLoader(Pairs(args.delay), batch_size=8):
            loss = torch.nn.functional.mse_loss(model(x), y)
            if args.crash:
                raise ValueError("loss exploded on purpose")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
"""


def collect_run_changes(client: LanguageClient) -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = []

    @client.feature("quickdev/runChanged")
    def on_run_changed(params: Any) -> None:
        changes.append(plain(params))

    return changes


def plain(value: Any) -> Any:
    """pygls hands unknown notifications over as nested namedtuples; tests want JSON."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


async def wait_for(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def final(changes: list[dict[str, Any]], run_id: str) -> dict[str, Any] | None:
    done = ("passed", "failed", "stopped", "killed", "cancelled")
    return next(
        (c for c in reversed(changes) if c["runId"] == run_id and c["status"] in done), None
    )


@contextlib.asynccontextmanager
async def server_in(
    cwd: Path, workspace: Path, env: dict[str, str] | None = None
) -> AsyncIterator[LanguageClient]:
    """The real server started as the editor starts it: in ``cwd``, with ``env``."""
    command = ["sh", "-c", 'cd "$0" && exec "$1" -m quickdev serve', str(cwd), sys.executable]
    client = await ClientServerConfig(server_command=command, server_env=env).start()
    assert isinstance(client, LanguageClient)
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                workspace_folders=[types.WorkspaceFolder(uri=uri(workspace), name=workspace.name)],
                initialization_options={"quickdev": {}},
            )
        )
        yield client
    finally:
        # Also after a failed assertion: a server never asked to exit keeps the test waiting.
        await asyncio.wait_for(client.shutdown_session(), DEADLINE_S)
        await client.stop()
