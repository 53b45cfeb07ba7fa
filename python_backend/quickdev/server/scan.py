"""``quickdev.scanWorkspace``: the entry scripts of each workspace folder.

The extension generates launch configurations from this; the server also uses it to pick
the script to run for "Debug this step" in a module that is not a script itself.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.uris import to_fs_path

from quickdev.analysis import analyze_text
from quickdev.analysis.module_files import module_entry
from quickdev.analysis.source import decode_source
from quickdev.server import run_files
from quickdev.server.app import QuickdevServer
from quickdev.server.commands import problem, register
from quickdev.server.lenses import client_refreshes_lenses
from quickdev.server.log import log
from quickdev.server.protocol import ScanAnswer, ScannedFolder, ScannedScript
from quickdev.server.types import EntryScript

SKIP_DIRS = frozenset(
    {"node_modules", "__pycache__", "site-packages", "venv", "env", "build", "dist", "out"}
)
MAX_FILES = 5000
MAX_BYTES = 2_000_000
# Only files containing one of these can have an entry point; the rest are not parsed.
HINTS = (b"__main__", b"Trainer", b"main(", b"\nfor ", b"\nwhile ", b"run(")


def setup(server: QuickdevServer) -> None:
    register(server, "quickdev.scanWorkspace", ScanWorkspace, scan_workspace)

    @server.feature(types.INITIALIZED)
    async def scan_on_start(ls: QuickdevServer, params: types.InitializedParams) -> None:
        await run_files.recover_at_start(ls)
        try:
            await _scan(ls, ls.workspace_folders())
            if client_refreshes_lenses(ls):
                await ls.workspace_code_lens_refresh_async(None)
        except Exception:
            log.exception("workspace scan at start-up failed")

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def scan_new_folders(
        ls: QuickdevServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        for removed in params.event.removed:
            if (path := to_fs_path(removed.uri)) is not None:
                ls.state.entry_scripts.pop(Path(path), None)
        added = [Path(p) for f in params.event.added if (p := to_fs_path(f.uri)) is not None]
        try:
            await _scan(ls, added)
        except Exception:
            log.exception("scanning added workspace folders failed")

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def rescan_saved_file(
        ls: QuickdevServer, params: types.DidSaveTextDocumentParams
    ) -> None:
        """A saved file may have become (or stopped being) an entry script."""
        fs_path = to_fs_path(params.text_document.uri)
        path = Path(fs_path) if fs_path else None
        folder = ls.folder_of(path) if path is not None and path.suffix == ".py" else None
        if path is None or folder is None or folder not in ls.state.entry_scripts:
            return
        kind = await asyncio.to_thread(_entry_kind, path)
        scripts = [s for s in ls.state.entry_scripts[folder] if s.path != path]
        if kind is not None:
            scripts.append(EntryScript(path, kind))
        ls.state.entry_scripts[folder] = sorted(scripts, key=lambda s: s.path)


@dataclass(frozen=True)
class ScanWorkspace:
    folders: list[str] | None = field(
        default=None, metadata=problem('"folders" must be a list of folder paths')
    )


async def scan_workspace(ls: QuickdevServer, wanted: ScanWorkspace) -> ScanAnswer:
    raw = wanted.folders
    folders = ls.workspace_folders() if raw is None else [Path(f) for f in raw]
    return {"folders": await _scan(ls, folders)}


async def _scan(ls: QuickdevServer, folders: list[Path]) -> list[ScannedFolder]:
    answers: list[ScannedFolder] = []
    for folder in folders:
        if not folder.is_dir():
            answers.append({"folder": str(folder), "entryScripts": [], "error": "folder not found"})
            continue
        scripts = await asyncio.to_thread(scan_folder, folder)
        ls.state.entry_scripts[folder] = scripts
        found = await asyncio.to_thread(_scanned_all, scripts)
        answers.append({"folder": str(folder), "entryScripts": found})
    return answers


def _scanned_all(scripts: list[EntryScript]) -> list[ScannedScript]:
    return [_scanned(script) for script in scripts]


def _scanned(script: EntryScript) -> ScannedScript:
    scanned: ScannedScript = {"path": str(script.path), "kind": script.kind}
    # Read again only for a file in a package: the one kind that may need `python -m`.
    if (script.path.parent / "__init__.py").is_file():
        try:
            source = decode_source(script.path.read_bytes()) or ""
        except OSError:
            source = ""
        if (entry := module_entry(script.path, source)) is not None:
            scanned["module"], scanned["cwd"] = entry[0], str(entry[1])
    return scanned


def scan_folder(folder: Path) -> list[EntryScript]:
    """The entry scripts among the first ``MAX_FILES`` Python files of ``folder``."""
    found: list[EntryScript] = []
    for seen, path in enumerate(_python_files(folder), start=1):
        if seen > MAX_FILES:
            log.warning("scan of %s stopped after %d Python files", folder, MAX_FILES)
            break
        kind = _entry_kind(path)
        if kind is not None:
            found.append(EntryScript(path, kind))
    return sorted(found, key=lambda s: s.path)


def _python_files(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        yield from (Path(root) / name for name in sorted(files) if name.endswith(".py"))


def _entry_kind(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if not any(hint in data for hint in HINTS):
        return None
    text = decode_source(data)
    return None if text is None else analyze_text(text).script_kind
