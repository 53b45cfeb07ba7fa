"""What a transform of the user's code provides to the ``Rewriter``."""

from __future__ import annotations

import ast
import hashlib
from typing import Any, Protocol

# The attributes of a compound statement that hold statement lists (``if``/``for``/
# ``while``/``try``/``with``/``def``/``class``); ``try`` handlers and ``match`` cases
# hold theirs one level down.
STATEMENT_BLOCKS = ("body", "orelse", "finalbody")
# Decorators of functions compiled from their bytecode (numba): code inserted into them
# would meet names the JIT cannot type, so transforms leave them as written.
_BYTECODE_JITS = frozenset({"jit", "njit", "vectorize", "guvectorize", "cfunc", "stencil"})

# Transforms return metadata the cache keeps beside the code: what ``marshal`` stores
# (None, bool, int, float, str, bytes, tuples, lists, dicts of these).
Metadata = Any


class Transform(Protocol):
    """One change to the user's code, made on its syntax tree before it is compiled.

    ``key`` names the transform and its version: it is part of the cache key, so it must
    change whenever the code the transform produces changes (``source_key`` does that).
    """

    key: str

    def wanted(self, source: str) -> bool:
        """A cheap look at the source text: False when ``apply`` would change nothing,
        so the file is not even parsed (most files of a project hold no loop)."""
        ...

    def apply(self, tree: ast.Module, source: str, filename: str) -> Metadata | None:
        """Change ``tree`` in place; return metadata about the change (kept in the cache
        with the code), or None when nothing was changed."""
        ...

    def loaded(self, filename: str, metadata: Metadata) -> None:
        """The rewritten code of ``filename`` is about to run (freshly compiled or from
        the cache): ``metadata`` is what ``apply`` returned for it."""
        ...


def source_key(name: str, module_file: str) -> str:
    """``name`` and a digest of the transform's own module and of this one (the helpers
    transforms build with): any change to either makes a new key, so no cached code from
    an older version runs."""
    digest = hashlib.sha256()
    for path in (module_file, __file__):
        with open(path, "rb") as file:
            digest.update(file.read())
    return f"{name} {digest.hexdigest()[:16]}"


def jit_compiled(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a JIT compiles ``function`` from its bytecode: ``@njit``, ``@numba.njit``,
    ``@numba.njit(cache=True)``."""
    return any(_name_of(d) in _BYTECODE_JITS for d in function.decorator_list)


def _name_of(decorator: ast.expr) -> str:
    if isinstance(decorator, ast.Call):
        decorator = decorator.func
    if isinstance(decorator, ast.Attribute):
        return decorator.attr
    return decorator.id if isinstance(decorator, ast.Name) else ""


def no_location(node: ast.AST) -> ast.AST:
    """Give ``node`` and everything under it no source position.

    Instructions without a line number raise no line event, so a debugger never stops
    on them and stepping goes from the user's line to the user's next line; coverage
    does not count them; the line table of the code stays the user's.
    """
    for inner in ast.walk(node):
        if "lineno" in inner._attributes:
            inner.lineno = inner.end_lineno = -1  # type: ignore[attr-defined]
            inner.col_offset = inner.end_col_offset = -1  # type: ignore[attr-defined]
    return node


def located_at(node: ast.AST, statement: ast.stmt) -> ast.AST:
    """Give ``node`` and everything under it ``statement``'s first line, for code put at the
    start of a function body. There an instruction without a position takes the one before
    it, the ``def`` line: a line event on the ``def`` that stepping into the function would
    stop on. On the line of the statement it precedes, it raises the one line event that
    statement raises anyway."""
    for inner in ast.walk(node):
        if "lineno" in inner._attributes:
            inner.lineno = inner.end_lineno = statement.lineno  # type: ignore[attr-defined]
            inner.col_offset = inner.end_col_offset = statement.col_offset  # type: ignore[attr-defined]
    return node
