"""A failed run becomes a diagnostic at the user's failing line; a good run clears it.

Diagnostics are kept per script, so two scripts failing in the same shared module both
show, and a good run of one clears only its own.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

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
                diagnostic = _diagnostic(path, line - 1, failure.message, run.run_id)
                self._by_uri.setdefault(uri, {})[script] = diagnostic
                changed.append(uri)
        return list(dict.fromkeys(changed))

    def for_uri(self, uri: str) -> list[types.Diagnostic]:
        return list(self._by_uri.get(uri, {}).values())


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
