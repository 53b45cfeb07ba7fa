"""The tensors the last quick-dev run saw, in the editor: ``textDocument/inlayHint`` after
each statement that bound one (``q: f32[64, 6, 256, 64]``), the hint's tooltip and
``textDocument/hover`` on the bound name with more (device, grad, min/max/mean, NaN/Inf, the
run), and ``quickdev.clearShapes``.

Hints follow the document as it is edited: a binding keeps its hint while its statement's
lines are unchanged, wherever they moved (``shape_records.Placement``); an edited statement
loses it until the next run. The setting ``tensorShapes`` off: no hints (and jobs record
nothing, ``job_request``).

A run that ends brings its shapes to the editor without a keystroke
(``workspace/inlayHint/refresh``): the server's own runs as they end, and runs started
elsewhere (``quickdev run`` in a terminal) as their record appears in a runs directory,
which is looked at every ``RUNS_POLL_S`` once the editor has asked for hints.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.uris import to_fs_path, uri_scheme
from pygls.workspace import TextDocument

from quickdev.server.app import PlainJson, QuickdevServer
from quickdev.server.commands import NoArgument, register
from quickdev.server.log import log
from quickdev.server.protocol import ClearShapesAnswer
from quickdev.server.run_state import Run
from quickdev.server.shape_records import SHAPES, DocumentShapes, Placement
from quickdev.server.shape_words import hint_label, hover_markdown

_WORD = re.compile(r"\w+")
# How often the runs directories are looked at for records of runs this server did not
# start: a stat of each directory, a listing only when one changed.
RUNS_POLL_S = 1.0
CLEAR = "quickdev.clearShapes"
CLEAR_LENS = "quickdev.lens.clearShapes"  # registered by the extension; calls CLEAR


class ShapeHints:
    """The feature's state; ``run_finished`` is wired to the job manager (server/main.py)."""

    def __init__(self, ls: QuickdevServer) -> None:
        self.ls = ls
        self.documents = DocumentShapes()
        self._reading: set[asyncio.Task[None]] = set()
        self._polling: asyncio.Task[None] | None = None

    def run_finished(self, run: Run) -> None:
        """A job of this session ended: its record is read (off the event loop) and the
        editor asked for hints again."""
        self.documents.runs_dirs.add(run.run_dir.parent)
        task = asyncio.get_running_loop().create_task(self._read(run.run_dir))
        self._reading.add(task)
        task.add_done_callback(self._reading.discard)

    async def _read(self, run_dir: Path) -> None:
        if await asyncio.to_thread(self.documents.index.add_run, run_dir):
            self.ask_again()

    def ask_again(self) -> None:
        workspace = self.ls.client_capabilities.workspace
        if workspace and workspace.inlay_hint and workspace.inlay_hint.refresh_support:
            self.ls.workspace_inlay_hint_refresh(None)
        if workspace and workspace.code_lens and workspace.code_lens.refresh_support:
            self.ls.workspace_code_lens_refresh(None)  # the clear lens

    async def placed(self, uri: str) -> tuple[TextDocument, Placement] | None:
        if not self.ls.state.settings.tensor_shapes or uri_scheme(uri) != "file":
            return None
        path = to_fs_path(uri)
        document = self.ls.workspace.text_documents.get(unquote(uri))
        if path is None or document is None:
            return None
        if self._polling is None:
            self._polling = asyncio.get_running_loop().create_task(self._poll_runs())
        found = await asyncio.to_thread(
            self.documents.placed, uri, path, document.version, document.source, self._runs_dirs()
        )
        return (document, found) if found is not None else None

    def _runs_dirs(self) -> list[Path]:
        return [self.ls.runs_dir_for(f) for f in self.ls.workspace_folders()]

    async def _poll_runs(self) -> None:
        """Records of runs this server did not start (a terminal's), as they appear."""
        while True:
            await asyncio.sleep(RUNS_POLL_S)
            if not self.ls.state.settings.tensor_shapes:
                continue
            try:
                changed = await asyncio.to_thread(self.documents.refresh, self._runs_dirs())
            except Exception:
                log.exception("looking for new tensor-shape records failed")
                continue
            if changed:
                self.ask_again()

    async def lenses(self, uri: str) -> list[dict[str, Any]]:
        """One lens above the first hint of the file: where the shapes come from, and the
        click that clears them."""
        found = await self.placed(uri)
        placed = found[1].all() if found is not None else []
        if found is None or not placed:
            return []
        shapes = found[1].shapes
        position = {
            "line": placed[0].line - (placed[0].binding.line - placed[0].binding.first_line),
            "character": 0,
        }
        title = f"Tensor shapes from run {shapes.run.run_id} · clear"
        return [
            {
                "range": {"start": position, "end": position},
                # No arguments: VS Code then runs the command by its id, where a lens with
                # arguments is looked up in a cache that a lens refresh (a run ending) empties.
                "command": {"title": title, "command": CLEAR_LENS},
            }
        ]


def setup(server: QuickdevServer) -> ShapeHints:
    hints = ShapeHints(server)
    server.state.put(SHAPES, hints.documents)

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=True))
    async def inlay_hint(ls: QuickdevServer, params: types.InlayHintParams) -> PlainJson:
        try:
            return PlainJson(await _hints(hints, params.text_document.uri, params.range))
        except Exception:
            log.exception("inlay hints failed for %s", params.text_document.uri)
            return PlainJson()

    @server.feature(types.INLAY_HINT_RESOLVE)
    async def resolve(ls: QuickdevServer, hint: types.InlayHint) -> types.InlayHint:
        data = hint.data if isinstance(hint.data, dict) else {}
        found = await hints.placed(str(data.get("uri", "")))
        line = data.get("line")
        if found is not None and isinstance(line, int):
            _, placement = found
            for p in placement.within(line, line):
                for name in p.binding.names:
                    if name.name == data.get("name"):
                        hint.tooltip = _markdown(hover_markdown(name, placement.shapes.run))
        return hint

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: QuickdevServer, params: types.HoverParams) -> types.Hover | None:
        try:
            return await _hover(hints, params.text_document.uri, params.position)
        except Exception:
            log.exception("hover failed for %s", params.text_document.uri)
            return None

    async def clear(ls: QuickdevServer, argument: NoArgument) -> ClearShapesAnswer:
        cleared = hints.documents.index.clear()
        hints.ask_again()
        return {"cleared": cleared}

    register(server, CLEAR, NoArgument, clear)
    return hints


async def _hints(hints: ShapeHints, uri: str, within: types.Range) -> list[dict[str, Any]]:
    found = await hints.placed(uri)
    if found is None:
        return []
    document, placement = found
    lines = placement.lines  # the document's, split once per version
    labels = placement.shapes.labels
    out = []
    for p in placement.within(within.start.line, within.end.line):
        text = lines[p.line] if p.line < len(lines) else ""
        character = (
            p.col if text.isascii() else document.position_codec.client_num_units(text[: p.col])
        )
        for name in p.binding.names:
            label = labels.get(id(name))
            if label is None:
                label = labels[id(name)] = hint_label(name)
            out.append(
                {
                    "position": {"line": p.line, "character": character},
                    "label": label,
                    "kind": types.InlayHintKind.Type.value,
                    "paddingLeft": True,
                    "data": {"uri": uri, "line": p.line, "name": name.name},
                }
            )
    return out


async def _hover(hints: ShapeHints, uri: str, position: types.Position) -> types.Hover | None:
    found = await hints.placed(uri)
    if found is None:
        return None
    document, placement = found
    shapes, placed = placement.shapes, placement.all()
    lines = document.lines
    if position.line >= len(lines):
        return None
    at = document.position_codec.position_from_client_units(lines, position)
    text = lines[position.line]
    word = next((m for m in _WORD.finditer(text) if m.start() <= at.character <= m.end()), None)
    if word is None:
        return None
    for p in placed:
        first = p.line - (p.binding.line - p.binding.first_line)
        if not first <= position.line <= p.line:
            continue
        for name in p.binding.names:
            if name.name == word.group():
                start = document.position_codec.client_num_units(text[: word.start()])
                end = start + document.position_codec.client_num_units(word.group())
                return types.Hover(
                    contents=_markdown(hover_markdown(name, shapes.run)),
                    range=types.Range(
                        types.Position(position.line, start), types.Position(position.line, end)
                    ),
                )
    return None


def _markdown(text: str) -> types.MarkupContent:
    return types.MarkupContent(kind=types.MarkupKind.Markdown, value=text)
