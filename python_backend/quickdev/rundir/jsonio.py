"""Atomic JSON writes and tolerant JSON reads: the only ones in the project.

Several processes read a run directory while a job writes it, so a writer must
never let a reader see half a file: write a temporary file beside the target, then
rename it over the target (atomic on POSIX and Windows). The temporary name carries
the process and thread, so two writers never share one.
"""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path
from typing import Any


def write_json(path: Path, data: Any, *, indent: int | None = None) -> Path:
    """Replace ``path`` with ``data`` as JSON, atomically."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=indent, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, or None when it is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def finite_json(value: Any) -> Any:
    """``value`` with every NaN or infinite number as None. Python writes them (``NaN``,
    ``Infinity``) but JSON has none: the editor's reader rejects a whole message holding one,
    and a loss that turned NaN is just what a NaN hunt's result holds."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite_json(v) for v in value]
    return value
