"""The analysis of each open document, cached per version and updated incrementally.

A lens request never parses more than ``MAX_REGION_LINES`` (about 8 ms); a larger edited
region keeps its last good facts, shifted past the edit, and is parsed once typing pauses
for ``SETTLE_DELAY_S``, after which the client is asked to fetch lenses again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from quickdev.analysis import Analysis, IncrementalAnalyzer

MAX_REGION_LINES = 300
SETTLE_DELAY_S = 0.3


def _analyzer() -> IncrementalAnalyzer:
    return IncrementalAnalyzer(max_region_lines=MAX_REGION_LINES)


@dataclass
class _Entry:
    version: int | None = None
    analysis: Analysis | None = None
    analyzer: IncrementalAnalyzer = field(default_factory=_analyzer)
    settle_timer: asyncio.TimerHandle | None = None


class DocumentAnalyses:
    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self.on_settled: Callable[[str], None] = lambda uri: None

    def analysis(self, uri: str, version: int | None, text: str) -> Analysis:
        entry = self._entries.setdefault(uri, _Entry())
        if entry.analysis is not None and version is not None and entry.version == version:
            return entry.analysis
        entry.analysis = entry.analyzer.update(text)
        entry.version = version
        if entry.settle_timer is not None:
            entry.settle_timer.cancel()
            entry.settle_timer = None
        if entry.analyzer.has_pending:
            loop = asyncio.get_running_loop()
            entry.settle_timer = loop.call_later(SETTLE_DELAY_S, self._settle, uri, entry)
        return entry.analysis

    def _settle(self, uri: str, entry: _Entry) -> None:
        entry.settle_timer = None
        if self._entries.get(uri) is not entry:
            return  # closed meanwhile
        entry.analysis = entry.analyzer.settle()
        self.on_settled(uri)

    def forget(self, uri: str) -> None:
        entry = self._entries.pop(uri, None)
        if entry is not None and entry.settle_timer is not None:
            entry.settle_timer.cancel()
