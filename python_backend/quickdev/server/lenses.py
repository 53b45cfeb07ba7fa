"""``textDocument/codeLens``: run/debug/profile, "Find first NaN" and the memory forecast
on a script's entry point, debug on each step.

Lenses come from the document's cached, incrementally updated analysis, so a request right
after an edit re-parses only the statements the edit touched. They are answered as plain
JSON objects, sent as they are (``PlainJson``): converting hundreds of ``CodeLens``
objects, or even walking the plain ones, costs more than the analysis.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.uris import to_fs_path, uri_scheme

from quickdev.analysis import Analysis, Step
from quickdev.analysis.findings import TRAINING_STEP_KINDS
from quickdev.analysis.module_files import module_entry
from quickdev.analysis.source import decode_source
from quickdev.server.app import PlainJson, QuickdevServer
from quickdev.server.documents import MAX_DOCUMENT_CHARS, analyze_bounded
from quickdev.server.log import log

Lens = dict[str, Any]

# (switch, title, command, tooltip) above a script's entry point.
ENTRY_LENSES = (
    (
        "run",
        "Quick-dev run",
        "quickdev.lens.run",
        "Run this script for a few batches of train/val/test, one epoch, and show the result",
    ),
    (
        "run",
        "Run with Arguments…",
        "quickdev.lens.runWithArguments",
        "Ask for the script's arguments (the last ones used are offered), then quick-dev run it",
    ),
    (
        "debug",
        "Debug",
        "quickdev.lens.debug",
        "Quick-dev run under the debugger: breakpoints in your code, torch and libraries",
    ),
    (
        "profile",
        "Profile",
        "quickdev.lens.profile",
        "Quick-dev run under torch.profiler, then open the trace in TensorBoard",
    ),
    (
        "nonfinite",
        "Find first NaN",
        "quickdev.lens.findNonfinite",
        "Debug run until the first NaN/Inf reaches the loss, a gradient or a parameter, "
        "stopping where it was made",
    ),
)
# Titled with the script's newest forecast once there is one: "≈ 11.2 GB peak · fits 24 GB".
MEMORY_LENS = (
    "memory",
    "Memory forecast",
    "quickdev.lens.memoryForecast",
    "Forecast the GPU memory of one training step, and whether the real run fits",
)
STEP_COMMAND = "quickdev.lens.debugStep"
LIBRARY_DIRS = frozenset({"site-packages", "dist-packages"})


MoreLenses = Callable[[str], Awaitable[list[Lens]]]


def setup(server: QuickdevServer, more: MoreLenses | None = None) -> None:
    """``more``: another feature's lenses for a document (the shape hints' clear lens)."""

    def refresh(uri: str) -> None:
        if client_refreshes_lenses(server):
            server.workspace_code_lens_refresh(None)

    server.state.documents.on_settled = refresh

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    async def code_lens(ls: QuickdevServer, params: types.CodeLensParams) -> PlainJson:
        uri = params.text_document.uri
        try:
            found = await lenses_for(ls, uri)
            return PlainJson(found + await more(uri) if more else found)
        except Exception:
            # A lens request must never take the server down; no lenses is a safe answer.
            log.exception("code lenses failed for %s", uri)
            return PlainJson()

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: QuickdevServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.state.documents.forget(params.text_document.uri)


async def lenses_for(ls: QuickdevServer, uri: str) -> list[Lens]:
    # Unsaved buffers and notebook cells cannot be run as a script: no lenses.
    if uri_scheme(uri) != "file":
        return []
    fs_path = to_fs_path(uri)
    if fs_path is None:
        return []
    path = Path(fs_path)
    if is_installed_library(path):
        return []
    analysis = await _analysis(ls, uri, path)
    if analysis is None:
        return []
    switches = ls.state.settings.lenses
    lenses: list[Lens] = []
    entry = analysis.main_entry
    if entry is not None:
        argument = await _entry_argument(ls, uri, path)
        forecast = ls.state.forecasts.headline(path)
        for switch, title, command, tooltip in (*ENTRY_LENSES, MEMORY_LENS):
            if switches.get(switch, True):
                if switch == MEMORY_LENS[0] and forecast:
                    title = forecast
                lenses.append(_lens(entry.line, title, command, argument, tooltip))
    if analysis.steps and switches.get("step", True):
        script = path if entry is not None else _entry_script_near(ls, path)
        for step in analysis.steps:
            argument = {
                "script": str(script),
                "file": str(path),
                "line": step.body_line,
            }
            title, tooltip = _step_words(step, script, path)
            lenses.append(_lens(step.line, title, STEP_COMMAND, argument, tooltip))
    return lenses


def _step_words(step: Step, script: Path, path: Path) -> tuple[str, str]:
    """The lens's title and tooltip: a training step is "the step"; a forward or a dataset's
    item is named for what it is."""
    name = step.qualname.rsplit(".", 1)[-1]
    title = "Debug this step" if step.kind in TRAINING_STEP_KINDS else f"Debug {name}"
    line = step.body_line + 1
    if script == path:
        return title, f"Quick-dev debug this script, stopping at line {line} ({step.qualname})"
    return title, (
        f"Quick-dev debug {script.name}, stopping at {path.name}:{line} ({step.qualname})"
    )


def is_installed_library(path: Path) -> bool:
    """torch's or Lightning's own files, opened while stepping through them: their
    modules' ``forward`` methods are not the user's steps, so they get no lenses."""
    return not LIBRARY_DIRS.isdisjoint(path.parts)


async def _analysis(ls: QuickdevServer, uri: str, path: Path) -> Analysis | None:
    # pygls keys open documents by the unquoted URI (paths with spaces, non-ASCII letters).
    document = ls.workspace.text_documents.get(unquote(uri))
    if document is not None:
        return await ls.state.documents.analysis(uri, document.version, document.source)
    return await asyncio.to_thread(_analysis_on_disk, path)


def _analysis_on_disk(path: Path) -> Analysis | None:
    """A file not open in the editor, read honouring its coding cookie."""
    try:
        if path.stat().st_size > MAX_DOCUMENT_CHARS:
            return None  # generated data, not worth reading
        text = decode_source(path.read_bytes())
    except OSError:
        return None
    return None if text is None else analyze_bounded(text)


async def _entry_argument(ls: QuickdevServer, uri: str, path: Path) -> dict[str, Any]:
    """The entry lenses' argument: the script, and for a file that runs only as ``python -m``
    (in a package, importing it) the module and the folder to run it from."""
    argument: dict[str, Any] = {"script": str(path)}
    if not (path.parent / "__init__.py").is_file():
        return argument  # the common case costs one stat, not a read
    document = ls.workspace.text_documents.get(unquote(uri))
    source = document.source if document is not None else await asyncio.to_thread(_read, path)
    if (entry := module_entry(path, source)) is not None:
        argument["module"], argument["cwd"] = entry[0], str(entry[1])
    return argument


def _read(path: Path) -> str:
    try:
        return decode_source(path.read_bytes()) or ""
    except OSError:
        return ""


def _entry_script_near(ls: QuickdevServer, path: Path) -> Path:
    """For a step in a module (not a script): the closest entry script of the workspace."""
    folder = ls.folder_of(path)
    scripts = ls.state.entry_scripts.get(folder, []) if folder is not None else []
    best: tuple[int, str] | None = None
    chosen = path
    for script in scripts:
        if not path.parent.is_relative_to(script.path.parent):
            continue
        key = (-len(script.path.parent.parts), script.path.name)
        if best is None or key < best:
            best, chosen = key, script.path
    return chosen


def client_refreshes_lenses(ls: QuickdevServer) -> bool:
    workspace = ls.client_capabilities.workspace
    code_lens = workspace.code_lens if workspace else None
    return bool(code_lens and code_lens.refresh_support)


def _lens(line: int, title: str, command: str, argument: dict[str, Any], tooltip: str) -> Lens:
    """A ``CodeLens`` as JSON, at the start of ``line``."""
    position = {"line": line, "character": 0}
    return {
        "range": {"start": position, "end": position},
        "command": {
            "title": title,
            "command": command,
            "arguments": [argument],
            "tooltip": tooltip,
        },
    }
