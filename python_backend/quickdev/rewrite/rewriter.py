"""Source in, rewritten code out: parse, apply the transforms, compile, cache."""

from __future__ import annotations

import ast
import importlib.util
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import CodeType
from typing import Any

from quickdev.rewrite.cache import CodeCache
from quickdev.rewrite.transform import Transform

log = logging.getLogger(__name__)


@dataclass
class RewriteStats:
    """What rewriting cost this job, for its log."""

    rewritten: int = 0  # files parsed, transformed and compiled here
    cached: int = 0  # files whose rewritten code came from the cache
    as_written: int = 0  # files left as they are (nothing to change, or could not)
    seconds: float = 0.0


class Rewriter:
    def __init__(self, transforms: Sequence[Transform], cache: CodeCache) -> None:
        self.transforms = list(transforms)
        self.cache = cache
        self.stats = RewriteStats()
        self._key = ";".join(t.key for t in self.transforms)

    def code_for(self, source: bytes, filename: str) -> CodeType | None:
        """The rewritten code of ``source``, compiled as ``filename``; None when the file
        is to run as written: nothing to change, source plain Python rejects (the caller's
        own compile then raises the user's SyntaxError), or a transform failed (logged
        in one line). Never raises for the user's code."""
        started = time.perf_counter()
        try:
            code = self._code_for(source, filename)
        finally:
            self.stats.seconds += time.perf_counter() - started
        if code is None:
            self.stats.as_written += 1
        return code

    def _code_for(self, source: bytes, filename: str) -> CodeType | None:
        key = self.cache.key(source, filename, self._key)
        cached = self.cache.load(key)
        if cached is not None:
            code, metadata = cached
            if code is not None:
                self.stats.cached += 1
                self._loaded(filename, metadata)
            return code
        code, metadata, complete = self._rewrite(source, filename)
        if complete:  # a failure is logged again next time rather than cached
            self.cache.store(key, code, metadata)
        if code is not None:
            self.stats.rewritten += 1
            self._loaded(filename, metadata)
        return code

    def _rewrite(
        self, source: bytes, filename: str
    ) -> tuple[CodeType | None, dict[str, Any], bool]:
        """(code or None when nothing changes, metadata, whether every transform did its
        part: only then is the outcome cached)."""
        try:
            text = importlib.util.decode_source(source)
        except (SyntaxError, UnicodeDecodeError, LookupError):
            return None, {}, False
        transforms = [t for t in self.transforms if t.wanted(text)]
        complete = True
        metadata: dict[str, Any] = {}
        while transforms:
            try:
                tree = _parse(source, filename)
            except (SyntaxError, ValueError):
                return None, {}, False  # the user's own compile reports it
            metadata, failed = _apply(transforms, tree, text, filename)
            if failed is None:
                break
            complete = False
            transforms.remove(failed)  # the others still apply, to a fresh tree
            metadata = {}
        if not metadata:
            return None, {}, complete
        try:
            return compile(tree, filename, "exec", dont_inherit=True), metadata, complete
        except Exception as exc:  # a transform made a tree the compiler refuses
            log.warning(
                "%s runs as written: its rewritten code does not compile (%s)", filename, exc
            )
            return None, {}, False

    def _loaded(self, filename: str, metadata: dict[str, Any]) -> None:
        for transform in self.transforms:
            if transform.key in metadata:
                transform.loaded(filename, metadata[transform.key])


def _parse(source: bytes, filename: str) -> ast.Module:
    # dont_inherit: this module's own `from __future__` must not reach the user's code.
    tree = compile(source, filename, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    assert isinstance(tree, ast.Module)
    return tree


def _apply(
    transforms: Sequence[Transform], tree: ast.Module, text: str, filename: str
) -> tuple[dict[str, Any], Transform | None]:
    """Each transform's metadata, or the one that failed (its change is then not made)."""
    metadata: dict[str, Any] = {}
    for transform in transforms:
        try:
            result = transform.apply(tree, text, filename)
        except Exception as exc:
            log.warning(
                "%s: %s left out (%s: %s)", filename, transform.key, type(exc).__name__, exc
            )
            return metadata, transform
        if result is not None:
            metadata[transform.key] = result
    return metadata, None
