"""A failed run becomes a diagnostic at the user's failing line; it goes when it is fixed.

Diagnostics are kept per script, so two scripts failing in the same shared module both
show, and a good run of one clears only its own. The rule for "fixed": the next passed or
stopped run of the script clears it, and so does an edit of the failing line itself (the
error was about a line that is no longer there); an edit above it moves it with its line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from quickdev.server.run_state import Run

SOURCE = "quickdev"


class FailureDiagnostics:
    def __init__(self) -> None:
        self._by_uri: dict[str, dict[str, types.Diagnostic]] = {}

    def record(self, run: Run) -> list[str]:
        """Take a finished run into account; returns the URIs whose diagnostics changed."""
        if run.status not in ("passed", "stopped", "failed"):
            return []  # a cancelled or killed run says nothing about the code
        script = str(run.script)
        changed = [uri for uri, by_script in self._by_uri.items() if by_script.pop(script, None)]
        failure = run.failure
        file, line = (failure.file, failure.line) if failure else (None, None)
        if failure is not None and run.status == "failed" and file is not None and line is not None:
            path = Path(file) if Path(file).is_absolute() else run.request.cwd / file
            uri = from_fs_path(str(path))
            if uri is not None:
                uri = self._key(uri)
                diagnostic = _diagnostic(path, line - 1, failure.message, run.run_id)
                self._by_uri.setdefault(uri, {})[script] = diagnostic
                changed.append(uri)
        return list(dict.fromkeys(changed))

    def for_uri(self, uri: str) -> list[types.Diagnostic]:
        return list(self._by_uri.get(self._key(uri), {}).values())

    def edited(
        self, uri: str, changes: Sequence[types.TextDocumentContentChangeEvent]
    ) -> str | None:
        """Take an edit of a document into account; returns the URI (as kept here) whose
        diagnostics changed, or None."""
        key = self._key(uri)
        by_script = self._by_uri.get(key)
        if not by_script:
            return None
        changed = False
        for script, diagnostic in list(by_script.items()):
            line = _line_after(diagnostic.range.start.line, changes)
            if line is None:
                del by_script[script]
                changed = True
            elif line != diagnostic.range.start.line:
                by_script[script] = _moved(diagnostic, line)
                changed = True
        return key if changed else None

    def _key(self, uri: str) -> str:
        """The URI as diagnostics are kept: editors and pygls may quote a path differently."""
        path = to_fs_path(uri)
        return (from_fs_path(path) or uri) if path is not None else uri


def _line_after(line: int, changes: Sequence[types.TextDocumentContentChangeEvent]) -> int | None:
    """Where ``line`` is after ``changes`` (applied in order); None when one of them edits it
    (or replaces the whole document)."""
    for change in changes:
        if not isinstance(change, types.TextDocumentContentChangePartial):
            return None
        start, end = change.range.start.line, change.range.end.line
        if start <= line <= end and not _leaves_whole(change, line):
            return None
        if end <= line:
            line += change.text.count("\n") - (end - start)
    return line


def _leaves_whole(change: types.TextDocumentContentChangePartial, line: int) -> bool:
    """Whether a change that reaches ``line`` ends at its column 0 and leaves its text a line
    of its own: deleting the line above (``(line-1, 0)-(line, 0)``) or typing whole lines at
    its start moves it; typing at its start without a newline, or joining it to the line
    above (Backspace at column 0), edits it."""
    start, end = change.range.start, change.range.end
    if end.line != line or end.character != 0:
        return False
    return change.text.endswith("\n") or (not change.text and start.character == 0)


def _moved(diagnostic: types.Diagnostic, line: int) -> types.Diagnostic:
    start, end = diagnostic.range.start, diagnostic.range.end
    return types.Diagnostic(
        range=types.Range(
            start=types.Position(line=line, character=start.character),
            end=types.Position(line=line + end.line - start.line, character=end.character),
        ),
        message=diagnostic.message,
        severity=diagnostic.severity,
        source=diagnostic.source,
        code=diagnostic.code,
    )


def _diagnostic(path: Path, line: int, message: str, run_id: str) -> types.Diagnostic:
    line = max(line, 0)
    start, end = 0, 0
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            for i, text in enumerate(f):
                if i == line:
                    text = text.rstrip("\r\n")
                    start, end = len(text) - len(text.lstrip()), len(text)
                    break
    except OSError:
        pass
    return types.Diagnostic(
        range=types.Range(
            start=types.Position(line=line, character=start),
            end=types.Position(line=line, character=max(end, start + 1)),
        ),
        message=message,
        severity=types.DiagnosticSeverity.Error,
        source=SOURCE,
        code=run_id,
    )
