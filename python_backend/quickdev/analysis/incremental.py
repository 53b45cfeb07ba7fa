"""Re-analyse an edited document by re-parsing only the statements the edit touched.

A full ``ast.parse`` of 5,000 lines takes about 130 ms; a code lens request right after an
edit must answer in 20 ms. The document is kept as a list of top-level statements
("chunks"), each with its facts. After an edit, the chunks around the changed lines are
re-parsed on their own, which gives the same tree as a full parse because every chunk starts
at column 0 after complete statements. When that region does not parse, the last good facts
are kept (shifted past the edit) and the region stays as one "broken" chunk until a later
edit makes it parse.

With ``max_region_lines``, a region larger than that is not parsed on the spot: its last good
facts are shifted past the edit (exact for edits that add no ``def`` or ``class``) and the
region is "pending" until ``settle()`` parses it, which the caller runs once typing pauses.

"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from quickdev.analysis.facts import StatementFacts, first_line, shift_facts, statement_facts
from quickdev.analysis.findings import Analysis
from quickdev.analysis.resolve import resolve
from quickdev.analysis.source import split_lines

_BLOCK = 128
# A region starting with these may belong to the statement before it: parse the whole file.
_CONTINUATIONS = ("else", "elif", "except", "finally", "case")
# A full parse of about 25 ms: how long the GIL is held at a time by a large parse.
_PARSE_BLOCK_LINES = 1000
_NOT_A_START = ("", " ", "\t", "\r", "\n", "\f", "#", ")", "]", "}")


@dataclass(slots=True)
class _Chunk:
    """A top-level statement, or a region not parsed (``facts`` None) with its last good chunks.

    An unparsed region is either pending (not tried yet) or broken (``error`` says why).
    """

    start: int  # 0-based first line, decorators included
    end: int  # 0-based, exclusive
    facts: StatementFacts | None
    stale: tuple[_Chunk, ...] = ()
    pending: bool = False
    error: str | None = None

    def shifted(self, delta: int) -> _Chunk:
        # Called for every chunk after an edit: built directly, not with replace().
        stale = tuple(c.shifted(delta) for c in self.stale) if self.stale else ()
        return _Chunk(
            self.start + delta, self.end + delta, self.facts, stale, self.pending, self.error
        )

    def good_chunks(self) -> tuple[_Chunk, ...]:
        return (self,) if self.facts is not None else self.stale


class IncrementalAnalyzer:
    """The analysis of one document across its versions."""

    def __init__(self, max_region_lines: int | None = None) -> None:
        self._max_region_lines = max_region_lines
        self._lines: list[str] | None = None
        self._chunks: list[_Chunk] = []
        self._analysis = Analysis()

    @property
    def has_pending(self) -> bool:
        return any(c.facts is None and c.pending for c in self._chunks)

    def update(self, text: str) -> Analysis:
        new = split_lines(text)
        old = self._lines
        self._lines = new
        if old is None:
            self._reparse_all(new)
            return self._analysis
        if new == old:
            return self._analysis
        p, q = _changed_range(old, new)
        delta = len(new) - len(old)
        start, end = self._region(p, q, len(old))
        before = [c for c in self._chunks if c.end <= start]
        replaced = [c for c in self._chunks if c.start < end and c.end > start]
        after = [c.shifted(delta) for c in self._chunks if c.start >= end]
        region = new[start : end + delta]

        def unparsed(pending: bool, error: str | None = None) -> list[_Chunk]:
            # The region's last good facts; those after the edit move with it.
            stale = tuple(_moved(g, q, delta) for c in replaced for g in c.good_chunks())
            return [_Chunk(start, end + delta, None, stale, pending, error)]

        if self._too_big(region):
            middle = unparsed(pending=True)
        else:
            try:
                middle = _parse_blocks(region, start)
            except (SyntaxError, ValueError) as exc:
                if not _may_join_neighbours(region):
                    middle = unparsed(pending=False, error=_describe(exc, start))
                elif self._too_big(new):
                    middle = unparsed(pending=True)
                else:
                    self._reparse_all(new)
                    if not self._chunks or self._chunks[0].facts is not None:
                        return self._analysis
                    middle = unparsed(pending=False, error=self._chunks[0].error)
        self._chunks = before + middle + after
        self._analysis = self._combine()
        return self._analysis

    def settle(self) -> Analysis:
        """Parse the pending regions (each on its own, as ``update`` would have)."""
        lines = self._lines
        if lines is None or not self.has_pending:
            return self._analysis
        chunks: list[_Chunk] = []
        for c in self._chunks:
            if c.facts is not None or not c.pending:
                chunks.append(c)
                continue
            region = lines[c.start : c.end]
            try:
                chunks.extend(_parse_blocks(region, c.start))
            except (SyntaxError, ValueError) as exc:
                if _may_join_neighbours(region):
                    self._reparse_all(lines)
                    return self._analysis
                chunks.append(replace(c, pending=False, error=_describe(exc, c.start)))
        self._chunks = chunks
        self._analysis = self._combine()
        return self._analysis

    def _too_big(self, lines: list[str]) -> bool:
        return self._max_region_lines is not None and len(lines) > self._max_region_lines

    def _region(self, p: int, q: int, n_old: int) -> tuple[int, int]:
        """Old line range to re-parse: whole chunks around [p, q), and the chunk just before.

        The chunk before is included because an indented line typed after it may belong to
        it (a new method at the end of a class).
        """
        start = 0
        for c in self._chunks:
            if c.start < p:
                start = c.start
            else:
                break
        end = n_old
        for c in self._chunks:
            if c.end > q:
                end = c.end if c.start <= q else c.start
                break
        return start, max(end, q)

    def _reparse_all(self, lines: list[str]) -> None:
        try:
            self._chunks = _parse_blocks(lines, 0)
        except (SyntaxError, ValueError) as exc:
            stale = tuple(g for c in self._chunks for g in c.good_chunks())
            self._chunks = [_Chunk(0, len(lines), None, stale, False, _describe(exc, 0))]
        self._analysis = self._combine()

    def _combine(self) -> Analysis:
        good = [g for c in self._chunks for g in c.good_chunks()]
        analysis = resolve((g.start, g.facts) for g in good if g.facts is not None)
        errors = [c.error for c in self._chunks if c.error is not None]
        if not errors:
            return analysis
        return replace(analysis, parsed=False, syntax_error=errors[-1])


def _moved(chunk: _Chunk, q: int, delta: int) -> _Chunk:
    """A chunk's position after ``delta`` lines were inserted before old line ``q``."""
    if chunk.start >= q:
        return chunk.shifted(delta)
    if chunk.end <= q or chunk.facts is None:
        return chunk
    facts = shift_facts(chunk.facts, q - chunk.start, delta)
    return replace(chunk, end=chunk.end + delta, facts=facts)


def _parse_blocks(lines: list[str], offset: int) -> list[_Chunk]:
    """The statements of ``lines``, parsed about ``_PARSE_BLOCK_LINES`` at a time.

    ``ast.parse`` holds the GIL throughout: one call on a 50,000-line file stops every
    other thread of the server, its event loop included, for a second. Blocks that start
    at column 0 after complete statements give the same tree as one parse (the argument
    of ``update``), and the GIL is free between them. A block that does not parse on its
    own (a boundary inside a string, or a real error) is doubled until it does; its error,
    at the end, is reported at the file's line numbers.
    """
    chunks: list[_Chunk] = []
    start, n = 0, len(lines)
    while start < n:
        size = _PARSE_BLOCK_LINES
        while True:
            end = _next_boundary(lines, start + size)
            try:
                chunks.extend(_parse_chunks("".join(lines[start:end]), offset + start))
                break
            except SyntaxError as exc:
                if end >= n:
                    if exc.lineno is not None:
                        exc.lineno += start
                    raise
                size *= 2
        start = end
    return chunks


def _next_boundary(lines: list[str], i: int) -> int:
    """The first line at or after ``i`` that may start a statement of its own."""
    while i < len(lines):
        line = lines[i]
        if (
            line[:1] not in _NOT_A_START
            and line.split(maxsplit=1)[0].rstrip(":") not in _CONTINUATIONS
            and not lines[i - 1].startswith("@")
            and not lines[i - 1].rstrip().endswith("\\")
        ):
            return i
        i += 1
    return len(lines)


def _parse_chunks(text: str, offset: int) -> list[_Chunk]:
    """The statements of ``text``; ValueError (as for bad source) when it is too deep.

    A generated file with one long expression (``1 + 1 + ...``) parses, but building its
    tree or walking it recurses past Python's limit: it cannot be analysed, like a file
    with a syntax error, and must not end the analysis of anything else.
    """
    try:
        tree = ast.parse(text)
        return [
            _Chunk(
                offset + first_line(stmt) - 1,
                offset + (stmt.end_lineno or stmt.lineno),
                statement_facts(stmt),
            )
            for stmt in tree.body
        ]
    except (RecursionError, MemoryError) as exc:
        raise ValueError(f"too deeply nested to analyse ({exc})") from None


def _changed_range(old: list[str], new: list[str]) -> tuple[int, int]:
    """[p, q): the lines of ``old`` that differ from ``new`` (common prefix/suffix removed).

    Whole blocks are compared first, as list slices (in C), then single lines.
    """
    limit = min(len(old), len(new))
    p = 0
    while p + _BLOCK <= limit and old[p : p + _BLOCK] == new[p : p + _BLOCK]:
        p += _BLOCK
    while p < limit and old[p] == new[p]:
        p += 1
    s, n_old, n_new = 0, len(old), len(new)
    while s + _BLOCK <= limit - p and (
        old[n_old - s - _BLOCK : n_old - s] == new[n_new - s - _BLOCK : n_new - s]
    ):
        s += _BLOCK
    while s < limit - p and old[n_old - 1 - s] == new[n_new - 1 - s]:
        s += 1
    return p, n_old - s


def _may_join_neighbours(region: list[str]) -> bool:
    """Could the region fail alone yet parse as part of the whole file?"""
    code = [line for line in region if line.strip() and not line.lstrip().startswith("#")]
    if not code:
        return False
    first, last = code[0], code[-1].rstrip()
    return (
        first[:1] in (" ", "\t")
        or first.split(maxsplit=1)[0].rstrip(":") in _CONTINUATIONS
        or last.lstrip().startswith("@")
        or last.endswith("\\")
    )


def _describe(exc: SyntaxError | ValueError, offset: int) -> str:
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        return f"line {exc.lineno + offset}: {exc.msg}"
    return str(exc)
