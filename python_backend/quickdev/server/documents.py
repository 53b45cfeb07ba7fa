"""The analysis of each open document, cached per version and updated incrementally."""

from __future__ import annotations

from dataclasses import dataclass, field

from quickdev.analysis import Analysis, IncrementalAnalyzer


@dataclass
class _Entry:
    version: int | None = None
    analysis: Analysis | None = None
    analyzer: IncrementalAnalyzer = field(default_factory=IncrementalAnalyzer)


class DocumentAnalyses:
    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def analysis(self, uri: str, version: int | None, text: str) -> Analysis:
        entry = self._entries.setdefault(uri, _Entry())
        if entry.analysis is not None and version is not None and entry.version == version:
            return entry.analysis
        entry.analysis = entry.analyzer.update(text)
        entry.version = version
        return entry.analysis

    def forget(self, uri: str) -> None:
        self._entries.pop(uri, None)
