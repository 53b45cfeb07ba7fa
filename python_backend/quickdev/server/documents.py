"""The analysis of each open document, cached per version and updated incrementally.

A lens request never parses more than ``MAX_REGION_LINES`` (about 8 ms); a larger edited
region keeps its last good facts, shifted past the edit, and is parsed once typing pauses
for ``SETTLE_DELAY_S``, after which the client is asked to fetch lenses again.

Every parse runs on a worker thread, never on the event loop: the first analysis of a
generated 50,000-line file takes a second, during which the server must still answer
(a cancel, another file's lenses). A document over ``MAX_DOCUMENT_CHARS`` is not analysed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from quickdev.analysis import Analysis, IncrementalAnalyzer
from quickdev.server.log import log

MAX_REGION_LINES = 300
SETTLE_DELAY_S = 0.3
# About 200,000 lines: generated data, not a training script; it gets no lenses.
MAX_DOCUMENT_CHARS = 8_000_000


def _analyzer() -> IncrementalAnalyzer:
    return IncrementalAnalyzer(max_region_lines=MAX_REGION_LINES)


@dataclass
class _Entry:
    version: int | None = None
    analysis: Analysis | None = None
    analyzer: IncrementalAnalyzer = field(default_factory=_analyzer)
    settle_timer: asyncio.TimerHandle | None = None
    # The analyzer is used by one worker thread at a time; a request cancelled while its
    # thread still runs must not let the next one in beside it.
    lock: threading.Lock = field(default_factory=threading.Lock)

    def update(self, version: int | None, text: str) -> tuple[Analysis, bool]:
        """On a worker thread: the analysis of ``text``, and whether a region is pending."""
        with self.lock:
            if self.analysis is None or version is None or self.version != version:
                self.analysis = _bounded(self.analyzer.update, text)
                self.version = version
            return self.analysis, self.analyzer.has_pending

    def settle(self) -> None:
        with self.lock:
            self.analysis = self.analyzer.settle()


class DocumentAnalyses:
    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._settling: set[asyncio.Task[None]] = set()
        self.on_settled: Callable[[str], None] = lambda uri: None

    async def analysis(self, uri: str, version: int | None, text: str) -> Analysis:
        entry = self._entries.setdefault(uri, _Entry())
        if entry.analysis is not None and version is not None and entry.version == version:
            return entry.analysis
        analysis, pending = await asyncio.to_thread(entry.update, version, text)
        if entry.settle_timer is not None:
            entry.settle_timer.cancel()
            entry.settle_timer = None
        if pending and self._entries.get(uri) is entry:
            loop = asyncio.get_running_loop()
            entry.settle_timer = loop.call_later(SETTLE_DELAY_S, self._settle, uri, entry)
        return analysis

    def _settle(self, uri: str, entry: _Entry) -> None:
        entry.settle_timer = None
        if self._entries.get(uri) is not entry:
            return  # closed meanwhile
        task = asyncio.get_running_loop().create_task(self._settle_off_loop(uri, entry))
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    async def _settle_off_loop(self, uri: str, entry: _Entry) -> None:
        await asyncio.to_thread(entry.settle)
        if self._entries.get(uri) is entry:
            self.on_settled(uri)

    def forget(self, uri: str) -> None:
        entry = self._entries.pop(uri, None)
        if entry is not None and entry.settle_timer is not None:
            entry.settle_timer.cancel()


def analyze_bounded(text: str) -> Analysis:
    """A file read from disk, analysed once (on a worker thread), within the same bound."""
    return _bounded(lambda t: IncrementalAnalyzer().update(t), text)


def _bounded(analyze: Callable[[str], Analysis], text: str) -> Analysis:
    if len(text) > MAX_DOCUMENT_CHARS:
        log.info(
            "not analysing a document of %d characters (over %d)", len(text), MAX_DOCUMENT_CHARS
        )
        return Analysis()
    return analyze(text)
