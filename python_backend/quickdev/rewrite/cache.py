"""Rewritten code kept between jobs, outside the user's tree.

One file per source version: the key hashes the source, its file name (code objects carry
it), the transforms and their versions, and the interpreter's bytecode version, so an
edit, a move, a new Quickdev or another Python each miss rather than run stale code.
Nothing here may fail a job: an unreadable or unwritable cache is a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import marshal
import os
import sys
from pathlib import Path
from types import CodeType
from typing import Any

log = logging.getLogger(__name__)

# Bump when what an entry holds changes shape.
FORMAT = 1
# Entries kept; beyond this the oldest quarter goes (each source edit adds one).
KEEP_ENTRIES = 2000
_SUFFIX = ".code"

Entry = tuple[CodeType | None, dict[str, Any]]


class CodeCache:
    def __init__(self, folder: Path | None, keep: int = KEEP_ENTRIES) -> None:
        """``folder`` None: nothing is kept (every file is rewritten each time)."""
        self.folder = folder
        self.keep = keep
        self._ready = False  # the folder exists and was pruned (once per job)
        self._tag = b"|".join(
            [
                str(FORMAT).encode(),
                (sys.implementation.cache_tag or "").encode(),
                importlib.util.MAGIC_NUMBER,
            ]
        )

    def key(self, source: bytes, filename: str, transforms: str) -> str:
        digest = hashlib.sha256(self._tag)
        for part in (filename.encode("utf-8", "surrogateescape"), transforms.encode(), source):
            digest.update(len(part).to_bytes(8, "little"))
            digest.update(part)
        return digest.hexdigest()

    def load(self, key: str) -> Entry | None:
        """The code (None: the transforms changed nothing) and each transform's metadata."""
        if self.folder is None:
            return None
        try:
            data = (self.folder / (key + _SUFFIX)).read_bytes()
            version, code, metadata = marshal.loads(data)
        except (OSError, ValueError, EOFError, TypeError):
            return None
        if version != FORMAT or not isinstance(metadata, dict):
            return None
        if code is not None and not isinstance(code, CodeType):
            return None
        return code, metadata

    def store(self, key: str, code: CodeType | None, metadata: dict[str, Any]) -> None:
        if self.folder is None:
            return
        target = self.folder / (key + _SUFFIX)
        partial = self.folder / f".{key}.{os.getpid()}.tmp"
        try:
            data = marshal.dumps((FORMAT, code, metadata))
            if not self._ready:
                self.folder.mkdir(parents=True, exist_ok=True)
                self._prune()
                self._ready = True
            partial.write_bytes(data)
            os.replace(partial, target)  # a reader never sees half an entry
        except (OSError, ValueError) as exc:
            log.debug("rewritten code not cached (%s)", exc)
            with contextlib.suppress(OSError):
                partial.unlink()

    def _prune(self) -> None:
        """Beyond ``keep`` entries, drop the oldest quarter (before this job adds its own)."""
        assert self.folder is not None
        try:
            entries = [e for e in os.scandir(self.folder) if e.name.endswith(_SUFFIX)]
            if len(entries) <= self.keep:
                return
            entries.sort(key=lambda e: e.stat().st_mtime_ns)
            for entry in entries[: len(entries) - self.keep * 3 // 4]:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
        except OSError:
            return
