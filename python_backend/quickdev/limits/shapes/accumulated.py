"""Which bindings after a loop are made from what the loop accumulated: where a budget
cuts the loop short, their values are cut short too (``preds = torch.cat(preds)`` after an
evaluation loop over two batches of a thousand).

Static, from the ``ast`` of one block: a loop accumulates a name when its body adds to
it (``total += loss``), rebinds it from itself (``idx = torch.cat((idx, nxt), 1)``),
writes into it (``losses[k] = …``) or calls a method that adds to it in place
(``preds.append(out)``, ``acc.add_(x)``); only a plain name counts (``self.x.append``
would make every later line that reads ``self`` depend on the loop). A binding later in the same
block (nested blocks included, nested functions not) that reads an accumulated name
depends on the loop, and the names it binds are accumulated from then on. The names a
loop only rebinds (the last batch, the last loss) are not: their shape is an
iteration's, however many ran. Torch-free (the transform uses it).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from quickdev.rewrite import STATEMENT_BLOCKS

# Container methods that add to the object they are called on.
_ADDING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault"})

Span = tuple[int, int]  # a loop's header: its first line and the line its header ends on
Loop = ast.For | ast.AsyncFor | ast.While


def loop_dependents(body: list[ast.stmt]) -> dict[int, tuple[Span, ...]]:
    """``id`` of each binding statement under ``body`` that reads what a loop accumulated,
    the loop being a statement of ``body`` or nested in one (the loop over a loader inside
    ``with torch.no_grad():``) -> the headers of those loops."""
    found: dict[int, list[Span]] = {}
    for index, statement in enumerate(body):
        for loop in _loops_in(statement):
            accumulated = set(accumulated_names(loop))
            if not accumulated:
                continue
            span = header_span(loop)
            for later in body[index + 1 :]:
                for binding in _bindings(later):
                    if _reads(binding) & accumulated:
                        spans = found.setdefault(id(binding), [])
                        if span not in spans:
                            spans.append(span)
                        accumulated |= set(_bound_names(binding))
    return {key: tuple(spans) for key, spans in found.items()}


def _loops_in(statement: ast.stmt) -> Iterator[Loop]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return
    for node in _walk([statement]):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            yield node


def header_span(loop: Loop) -> Span:
    head = loop.test if isinstance(loop, ast.While) else loop.iter
    return loop.lineno, head.end_lineno or loop.lineno


def accumulated_names(loop: Loop) -> Iterator[str]:
    for node in _walk(loop.body):
        if isinstance(node, ast.AugAssign):
            yield from _written_into(node.target)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            reads = _names_read(node.value) if node.value is not None else set()
            for target in targets:
                if isinstance(target, ast.Subscript):
                    yield from _written_into(target)
                else:
                    yield from (n for n in _plain_names(target) if n in reads)  # from itself
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            in_place = method.endswith("_") and not method.startswith("_")
            if method in _ADDING_METHODS or in_place:
                yield from _written_into(node.func.value)


def _walk(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node under ``body``, not into nested functions, classes or lambdas."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
            ):
                stack.append(child)


def _bindings(statement: ast.stmt) -> Iterator[ast.Assign | ast.AugAssign | ast.AnnAssign]:
    """The assignments of ``statement`` and of the blocks under it, in order."""
    if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        yield statement
        return
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return
    for name in STATEMENT_BLOCKS:
        inner = getattr(statement, name, None)
        if isinstance(inner, list):
            for child in inner:
                if isinstance(child, ast.stmt):
                    yield from _bindings(child)
    for handler in getattr(statement, "handlers", ()):
        for child in handler.body:
            yield from _bindings(child)
    for case in getattr(statement, "cases", ()):
        for child in case.body:
            yield from _bindings(child)


def _reads(binding: ast.Assign | ast.AugAssign | ast.AnnAssign) -> set[str]:
    reads = _names_read(binding.value) if binding.value is not None else set()
    if isinstance(binding, ast.AugAssign):
        reads |= set(_plain_names(binding.target))
    return reads


def _bound_names(binding: ast.Assign | ast.AugAssign | ast.AnnAssign) -> Iterator[str]:
    targets = binding.targets if isinstance(binding, ast.Assign) else [binding.target]
    for target in targets:
        yield from _plain_names(target)


def _names_read(expression: ast.expr) -> set[str]:
    return {
        node.id
        for node in ast.walk(expression)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }


def _written_into(target: ast.expr) -> Iterator[str]:
    """``x`` of ``x`` and ``x[k]``; nothing for an attribute (``self.buf[k]``)."""
    while isinstance(target, ast.Subscript):
        target = target.value
    if isinstance(target, ast.Name):
        yield target.id


def _plain_names(target: ast.expr) -> Iterator[str]:
    """The names a target binds itself: ``x``, each name of ``x, (y, *z)``."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Starred):
        yield from _plain_names(target.value)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _plain_names(element)
