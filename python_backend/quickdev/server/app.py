"""The language server object: workspace folders, runs directories, messages to the user."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cattrs import Converter
from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import default_converter
from pygls.uris import to_fs_path

from quickdev import __version__
from quickdev.server.types import State


class PlainJson(list[Any]):
    """An answer the server built as JSON itself (code lenses): sent as it is. pygls would
    otherwise walk every object of it through cattrs before encoding it, which for the
    hundreds of lenses of a large file costs more than finding them."""


def _converter() -> Converter:
    converter: Converter = default_converter()  # type: ignore[no-untyped-call]
    converter.register_unstructure_hook(PlainJson, lambda value: value)
    return converter


class QuickdevServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "quickdev",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            converter_factory=_converter,
        )
        self.state = State()

    def workspace_folders(self) -> list[Path]:
        folders = [
            Path(path)
            for f in self.workspace.folders.values()
            if (path := to_fs_path(f.uri)) is not None
        ]
        if not folders and self.workspace.root_path:
            folders = [Path(self.workspace.root_path)]
        return folders

    def folder_of(self, path: Path) -> Path | None:
        """The innermost workspace folder holding ``path``."""
        holding = [f for f in self.workspace_folders() if path.is_relative_to(f)]
        return max(holding, key=lambda f: len(f.parts)) if holding else None

    def runs_dir_for(self, folder: Path) -> Path:
        runs_dir = Path(self.state.settings.runs_dir).expanduser()
        return runs_dir if runs_dir.is_absolute() else folder / runs_dir

    def show_error(self, message: str) -> None:
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Error, message=message)
        )
