"""The loop-exit transform: a check at the head of each of the user's loops.

``for x in xs: body`` becomes, in effect::

    for x in xs:
        if __quickdev_loop_3__ and __quickdev_loop_3__.pop(__quickdev_frame__(), None):
            break
        body

The check runs once the loop has decided to go round again (``xs`` gave an item, the
``while`` condition held) and before the body: a loop told to end in what was its last
iteration ends by itself and is not reported as ended early, and ``continue`` cannot
skip the check. The loop variable then holds the item the loop did not run (``epoch``
is 1 after epoch 0 ran): a ``break`` at the top of the body does the same.
While nothing is marked the check is one global load and one branch. The inserted
statement has no source position (as ``rewrite.no_location`` gives): no line event, so
breakpoints and stepping see only the user's lines, and the loop's line table is the
user's.

A loop whose body holds no call (no ``(`` and no ``await`` on its lines: ``total += i``)
cannot reach a budget and is left as written, so the tightest inner loops cost nothing.
Comprehensions are expressions and cannot ``break``: they are left as written too. So are
the functions a JIT compiles from their bytecode (numba's ``@jit``, ``@njit`` …): it
would meet names it cannot type.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from itertools import accumulate

from quickdev.analysis.source import split_lines
from quickdev.limits.loops.table import FRAME_GETTER, Loop, LoopTables, flag_name
from quickdev.rewrite import STATEMENT_BLOCKS, jit_compiled, source_key

# A cheap first look: a file without a loop statement is not even parsed.
_LOOP_KEYWORD = re.compile(r"^\s*(?:async\s+)?(?:for|while)\b", re.MULTILINE)

LoopRow = tuple[int, int, int, int]  # a Loop as the cache keeps it


class LoopExits:
    """The transform (``quickdev.rewrite.Transform``) that gives each loop an exit."""

    key = source_key("loop-exits", __file__)

    def __init__(self, tables: LoopTables) -> None:
        self.tables = tables

    def wanted(self, source: str) -> bool:
        return _LOOP_KEYWORD.search(source) is not None

    def apply(self, tree: ast.Module, source: str, filename: str) -> tuple[LoopRow, ...] | None:
        calls = _lines_with_calls(source)
        rows: list[LoopRow] = []
        for loop in list(_loops(tree.body)):
            first_body_line = loop.body[0].lineno
            first = loop.lineno if isinstance(loop, ast.While) else first_body_line
            last = loop.end_lineno or first_body_line
            if calls[min(last, len(calls) - 1)] == calls[first - 1]:
                continue  # no call in it: no step, no forward, nothing to end
            index = len(rows)
            loop.body.insert(0, _check(index))
            rows.append((index, loop.lineno, last, _header_end(loop)))
        return tuple(rows) or None

    def loaded(self, filename: str, metadata: tuple[LoopRow, ...]) -> None:
        self.tables.add(filename, tuple(Loop(*row) for row in metadata))


def _loops(body: list[ast.stmt]) -> Iterator[ast.For | ast.AsyncFor | ast.While]:
    """Every loop statement under ``body``, nested blocks and functions included."""
    stack = [body]
    while stack:
        for statement in stack.pop():
            if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
                yield statement
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and jit_compiled(
                statement
            ):
                continue
            for name in STATEMENT_BLOCKS:
                inner = getattr(statement, name, None)
                if isinstance(inner, list):
                    stack.append(inner)
            for handler in getattr(statement, "handlers", ()):
                stack.append(handler.body)
            for case in getattr(statement, "cases", ()):
                stack.append(case.body)


def _lines_with_calls(source: str) -> list[int]:
    """``counts[n]``: how many of the first n lines may hold a call (prefix sums), lines
    counted as the parser numbers them (a form feed does not end a line)."""
    flags = (int("(" in line or "await" in line) for line in split_lines(source))
    return [0, *accumulate(flags)]


def _check(index: int) -> ast.stmt:
    """``if FLAG and FLAG.pop(__quickdev_frame__(), None): break``, without a position
    (built node by node: the check is made for every loop of every file rewritten)."""
    flag = flag_name(index)

    def name(identifier: str) -> ast.Name:
        return ast.Name(identifier, ast.Load(), **_NOWHERE)

    frame = ast.Call(name(FRAME_GETTER), [], [], **_NOWHERE)
    pop = ast.Attribute(name(flag), "pop", ast.Load(), **_NOWHERE)
    call = ast.Call(pop, [frame, ast.Constant(None, None, **_NOWHERE)], [], **_NOWHERE)
    test = ast.BoolOp(ast.And(), [name(flag), call], **_NOWHERE)
    return ast.If(test, [ast.Break(**_NOWHERE)], [], **_NOWHERE)


# No source position (see quickdev.rewrite.no_location).
_NOWHERE = {"lineno": -1, "col_offset": -1, "end_lineno": -1, "end_col_offset": -1}


def _header_end(loop: ast.For | ast.AsyncFor | ast.While) -> int:
    head = loop.test if isinstance(loop, ast.While) else loop.iter
    return head.end_lineno or loop.lineno
