"""The recording transform: after each statement of the user's that binds names, a look at
what it bound, while the line is still being recorded.

``q, k, v = qkv.split(n, dim=2)`` is followed, in effect, by::

    if __quickdev_shapes_<file>__[7]:
        __quickdev_shapes_see__("__quickdev_shapes_<file>__", 7, (q, k, v))

The guard is one load of a list the recorder owns and one index: once the line has been
recorded (``observe.RecordedFiles`` counts its passes down to 0) it costs nothing more.
A function's parameters are looked at the same way at its first line (after its
docstring); a ``with … as`` target at the top of its block. A ``for`` loop's target is
looked at without a check in its body, which a tight loop would pay on every iteration:
while its line is recorded, the loop's iterable is handed over, already an iterator, to
``__quickdev_shapes_loop__``, which sees the first item as the loop fetches it (in C:
``itertools``, so an error of the iterable is raised with no Quickdev frame in between).

Inserted statements have no source position (``rewrite.no_location``): no line event, no
breakpoint, tracebacks and stepping stay the user's. Class bodies are not recorded (their
methods are); nor are functions a JIT compiles from their bytecode (numba).
"""

from __future__ import annotations

import ast
import copy
import hashlib
from collections.abc import Iterator
from typing import Any

from quickdev.analysis.source import line_hashes, split_lines
from quickdev.limits.shapes.accumulated import Span, loop_dependents
from quickdev.rewrite import STATEMENT_BLOCKS, jit_compiled, located_at, no_location, source_key

SEE = "__quickdev_shapes_see__"
LOOP = "__quickdev_shapes_loop__"
ITER = "__quickdev_shapes_iter__"  # builtins.iter under a name the script cannot shadow
_GUARD_PREFIX = "__quickdev_shapes_"
_NOT_RECORDED_PARAMETERS = frozenset({"self", "cls"})

# What the cache keeps per statement (``observe.Slot`` is made from it): (kind, first
# line, line, column, names, pattern of a for target or None, the headers of the loops
# before it whose accumulated names it reads: ``accumulated``)
SlotRow = tuple[str, int, int, int, tuple[str, ...], Any, tuple[Span, ...]]
Metadata = tuple[str, tuple[int, ...], tuple[SlotRow, ...]]


def guard_name(filename: str) -> str:
    """The builtin holding the file's guards: the same for the same file in every job, so
    code kept in the rewrite cache names it too."""
    digest = hashlib.sha256(filename.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{_GUARD_PREFIX}{digest}__"


class ShapeRecording:
    """The transform (``quickdev.rewrite.Transform``) that lets the job see what each line
    of the user's code bound. ``loaded`` hands each file's statements to ``files``."""

    key = source_key("tensor-shapes", __file__)

    def __init__(self, files: Any) -> None:
        self.files = files  # observe.RecordedFiles (kept untyped: this module stays torch-free)

    def wanted(self, source: str) -> bool:
        return True  # any file of the user's may bind a tensor

    def apply(self, tree: ast.Module, source: str, filename: str) -> Metadata | None:
        guard = guard_name(filename)
        inserter = _Inserter(guard, split_lines(source))
        tree.body = inserter.block(tree.body, record=True)
        if not inserter.slots:
            return None
        return guard, tuple(line_hashes(source)), tuple(inserter.slots)

    def loaded(self, filename: str, metadata: Metadata) -> None:
        self.files.add(filename, *metadata)


class _Inserter:
    def __init__(self, guard: str, lines: list[str]) -> None:
        self.guard = guard
        self.lines = lines
        self.slots: list[SlotRow] = []
        self.after_loops: dict[int, tuple[Span, ...]] = {}  # id(statement) -> loop headers

    def block(self, body: list[ast.stmt], record: bool) -> list[ast.stmt]:
        if record:
            for key, spans in loop_dependents(body).items():
                known = self.after_loops.get(key, ())
                self.after_loops[key] = known + tuple(s for s in spans if s not in known)
        out: list[ast.stmt] = []
        for statement in body:
            out.append(statement)
            self._inner_blocks(statement, record)
            if not record:
                continue
            if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                names = _assigned(statement)
                if names:
                    end = (statement.end_lineno or statement.lineno, statement.end_col_offset or 0)
                    after = self.after_loops.get(id(statement), ())
                    out.append(self._look(statement.lineno, end, "assign", names, after=after))
            elif isinstance(statement, ast.For):
                self._loop(statement)
            elif isinstance(statement, (ast.With, ast.AsyncWith)):
                self._with(statement)
        return out

    def _inner_blocks(self, statement: ast.stmt, record: bool) -> None:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if jit_compiled(statement):
                return
            statement.body = self.block(statement.body, record=True)
            self._parameters(statement)
            return
        if isinstance(statement, ast.ClassDef):
            statement.body = self.block(statement.body, record=False)
            return
        for name in STATEMENT_BLOCKS:
            inner = getattr(statement, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                setattr(statement, name, self.block(inner, record))
        for handler in getattr(statement, "handlers", ()):
            handler.body = self.block(handler.body, record)
        for case in getattr(statement, "cases", ()):
            case.body = self.block(case.body, record)

    def _parameters(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        arguments = function.args
        every = [
            *arguments.posonlyargs,
            *arguments.args,
            *([arguments.vararg] if arguments.vararg else []),
            *arguments.kwonlyargs,
            *([arguments.kwarg] if arguments.kwarg else []),
        ]
        names = tuple(a.arg for a in every if a.arg not in _NOT_RECORDED_PARAMETERS)
        if not names:
            return
        header_nodes: list[ast.AST] = [*every, *arguments.defaults]
        header_nodes += [d for d in arguments.kw_defaults if d is not None]
        header_nodes += [a.annotation for a in every if a.annotation is not None]
        if function.returns is not None:
            header_nodes.append(function.returns)
        end = max((_end(n)) for n in header_nodes)
        look = self._look(function.lineno, self._after_colon(end), "parameters", names)
        body = function.body
        docstring = (
            isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        )
        at = 1 if docstring else 0
        if at < len(body):
            located_at(look, body[at])  # stepping into the function lands on its first line
        body.insert(at, look)

    def _loop(self, loop: ast.For) -> None:
        names = _names(loop.target)
        if not names:
            return
        header = (loop.iter.end_lineno or loop.lineno, loop.iter.end_col_offset or 0)
        end = self._after_colon(header)
        slot = self._slot(loop.lineno, end, "for", names, _pattern(loop.target), chars=True)
        # ``iter(…)`` runs in the user's frame at the iterable's position: an error of the
        # iterable is raised at the user's line, as before.
        iterator = ast.copy_location(
            ast.Call(_load(ITER), [copy.deepcopy(loop.iter)], []), loop.iter
        )
        handed = ast.Call(_load(LOOP), [ast.Constant(self.guard), ast.Constant(slot), iterator], [])
        guard = self._guard(slot)
        no_location(guard)
        choice = ast.IfExp(guard, handed, loop.iter)
        _nowhere(choice, handed, handed.func, *handed.args[:2], iterator.func)
        loop.iter = choice

    def _with(self, statement: ast.With | ast.AsyncWith) -> None:
        names = tuple(
            dict.fromkeys(
                n
                for item in statement.items
                if item.optional_vars
                for n in _names(item.optional_vars)
            )
        )
        if not names:
            return
        last = statement.items[-1]
        node = last.optional_vars or last.context_expr
        end = self._after_colon((node.end_lineno or statement.lineno, node.end_col_offset or 0))
        statement.body.insert(0, self._look(statement.lineno, end, "with", names, chars=True))

    # --- building the inserted code -------------------------------------------------------

    def _slot(
        self, first: int, end: tuple[int, int], kind: str, names: tuple[str, ...],
        pattern: Any = None, chars: bool = False, after: tuple[Span, ...] = (),
    ) -> int:  # fmt: skip
        line, col = end
        if not chars:
            col = _chars(self.lines, line, col)
        self.slots.append((kind, first, line, col, names, pattern, after))
        return len(self.slots) - 1

    def _look(
        self,
        first: int,
        end: tuple[int, int],
        kind: str,
        names: tuple[str, ...],
        chars: bool = False,
        after: tuple[Span, ...] = (),
    ) -> ast.stmt:
        """``if GUARD[k]: SEE("GUARD", k, (names…))``, without a position."""
        slot = self._slot(first, end, kind, names, chars=chars, after=after)
        values = ast.Tuple([_load(n) for n in names], ast.Load())
        call = ast.Call(_load(SEE), [ast.Constant(self.guard), ast.Constant(slot), values], [])
        look = ast.If(self._guard(slot), [ast.Expr(call)], [])
        no_location(look)
        return look

    def _guard(self, slot: int) -> ast.expr:
        return ast.Subscript(_load(self.guard), ast.Constant(slot), ast.Load())

    def _after_colon(self, end: tuple[int, int]) -> tuple[int, int]:
        """Where a compound statement's header ends: after the ``:`` that follows ``end``
        (a position as ``ast`` gives it: 1-based line, UTF-8 column), in characters."""
        line, col = end[0], _chars(self.lines, end[0], end[1])
        while line <= len(self.lines):
            text = self.lines[line - 1]
            while col < len(text):
                char = text[col]
                if char == ":":
                    return line, col + 1
                if char == "#":
                    break
                col += 1
            line, col = line + 1, 0
        return end[0], _chars(self.lines, end[0], end[1])


def _nowhere(*nodes: ast.AST) -> None:
    """No source position for these nodes themselves (``no_location`` for one node)."""
    for node in nodes:
        node.lineno = node.end_lineno = -1  # type: ignore[attr-defined]
        node.col_offset = node.end_col_offset = -1  # type: ignore[attr-defined]


def _end(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "end_lineno", None) or 0, getattr(node, "end_col_offset", None) or 0


def _load(name: str) -> ast.Name:
    return ast.Name(name, ast.Load())


def _chars(lines: list[str], line: int, byte_col: int) -> int:
    """``ast``'s UTF-8 byte column as a character column of ``line``."""
    if not 0 < line <= len(lines):
        return byte_col
    text = lines[line - 1]
    if text.isascii():
        return byte_col
    return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def _assigned(statement: ast.Assign | ast.AugAssign | ast.AnnAssign) -> tuple[str, ...]:
    if isinstance(statement, ast.AnnAssign) and statement.value is None:
        return ()  # ``x: int`` binds nothing
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    return tuple(dict.fromkeys(n for t in targets for n in _names(t)))


def _names(target: ast.expr) -> tuple[str, ...]:
    """The plain names a target binds (``self.x`` and ``d[k]`` bind none of their own)."""
    return tuple(_walk_names(target))


def _walk_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _walk_names(element)
    elif isinstance(target, ast.Starred):
        yield from _walk_names(target.value)


def _pattern(target: ast.expr) -> Any:
    """How a ``for`` item unpacks into its target: a name, a tuple of patterns, ``"*name"``
    for a starred name, None for a place that binds no name of its own."""
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, (ast.Tuple, ast.List)):
        return tuple(_pattern(e) for e in target.elts)
    if isinstance(target, ast.Starred) and isinstance(target.value, ast.Name):
        return "*" + target.value.id
    return None
