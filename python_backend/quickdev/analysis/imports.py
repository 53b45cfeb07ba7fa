"""The absolute imports of a script, anywhere in it: what a warm process may preload.

``import a.b`` gives ``("a.b", ())``; ``from a.b import C, D`` gives ``("a.b", ("C", "D"))``
(a name may be a submodule, or an attribute a library loads lazily). Relative imports are
the user's own and are left out; so is anything whose name the user's folders hold, which
the caller decides.
"""

from __future__ import annotations

import ast
from pathlib import Path

from quickdev.analysis.source import decode_source

Import = tuple[str, tuple[str, ...]]


def script_imports(path: Path) -> list[Import]:
    try:
        text = decode_source(path.read_bytes())
        tree = ast.parse(text if text is not None else "")
    except (OSError, SyntaxError, ValueError, RecursionError):
        return []
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.setdefault(alias.name, set())
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = {alias.name for alias in node.names if alias.name != "*"}
            found.setdefault(node.module, set()).update(names)
    return [(name, tuple(sorted(names))) for name, names in found.items()]
