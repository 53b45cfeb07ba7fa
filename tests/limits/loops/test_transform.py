"""The loop exits in the user's code: a loop told to end does, and nothing else changes
(results, line events a debugger sees, loops that cannot reach a budget)."""

from __future__ import annotations

import asyncio
import sys
from types import CodeType, FrameType
from typing import Any

import pytest
from quickdev.limits.loops import LoopTables
from quickdev.limits.loops.marks import Marks, places
from quickdev.limits.loops.transform import LoopExits
from quickdev.rewrite import Rewriter
from quickdev.rewrite.cache import CodeCache
from quickdev.rundir.result import EndedLoop

FILE = "/project/train.py"


def compile_user(source: str, tables: LoopTables | None = None) -> CodeType:
    code = Rewriter([LoopExits(tables or LoopTables())], CodeCache(None)).code_for(
        source.encode(), FILE
    )
    assert code is not None, "nothing was rewritten"
    return code


class EndHere:
    """``end_here()`` in user code: mark every loop around the caller, as a budget does."""

    def __init__(self, tables: LoopTables) -> None:
        self.tables = tables
        self.marks = Marks()

    def __call__(self) -> None:
        for place in places(self.tables, sys._getframe(1)):
            for loop in place.loops:
                ended = EndedLoop(FILE, loop.line, "training", "loop_steps", 0, "steps")
                self.marks.add(place.frame, loop, ended, place.line)


def run_user(source: str, **names: Any) -> dict[str, Any]:
    tables = LoopTables()
    code = compile_user(source, tables)
    namespace: dict[str, Any] = {"end_here": EndHere(tables), **names}
    exec(code, namespace)
    return namespace


def test_a_marked_for_loop_ends_before_its_next_iteration_and_skips_its_else() -> None:
    ns = run_user(
        "done = []\n"
        "for i in range(10):\n"
        "    done.append(i)\n"
        "    if i == 2:\n"
        "        end_here()\n"
        "else:\n"
        "    done.append('else')\n"
        "after = True\n"
    )
    assert ns["done"] == [0, 1, 2] and ns["after"] and ns["i"] == 3


def test_while_loops_generators_and_continue_meet_the_check() -> None:
    ns = run_user(
        "def batches():\n"
        "    n = 0\n"
        "    while True:\n"
        "        n += 1\n"
        "        if n % 2:\n"
        "            continue\n"
        "        if n == 6:\n"
        "            end_here()\n"
        "        yield n\n"
        "got = list(batches())\n"
    )
    assert ns["got"] == [2, 4, 6]


def test_async_for_ends_too() -> None:
    ns = run_user(
        "async def stream():\n"
        "    for n in range(100):\n"
        "        yield n\n"
        "async def consume():\n"
        "    seen = []\n"
        "    async for n in stream():\n"
        "        seen.append(n)\n"
        "        if n == 1:\n"
        "            end_here()\n"
        "    return seen\n"
    )
    assert asyncio.run(ns["consume"]()) == [0, 1]


def test_only_the_marked_frame_ends_and_a_new_call_runs_in_full() -> None:
    ns = run_user(
        "def count(stop_at):\n"
        "    seen = 0\n"
        "    for _ in range(5):\n"
        "        seen += 1\n"
        "        if seen == stop_at:\n"
        "            end_here()\n"
        "    return seen\n"
        "first, second = count(2), count(-1)\n"
    )
    assert (ns["first"], ns["second"]) == (2, 5)


def test_try_except_exception_and_finally_see_a_break_not_an_exception() -> None:
    ns = run_user(
        "events = []\n"
        "try:\n"
        "    for step in range(100):\n"
        "        events.append(step)\n"
        "        end_here()\n"
        "except Exception:\n"
        "    events.append('caught')\n"
        "finally:\n"
        "    events.append('saved')\n"
    )
    assert ns["events"] == [0, "saved"]


def test_loops_without_a_call_and_functions_a_jit_compiles_are_left_as_written() -> None:
    tables = LoopTables()
    code = compile_user(
        "total = 0\n"
        "for i in range(10):\n"  # no call: cannot reach a budget
        "    total += i * i\n"
        "@numba.njit(cache=True)\n"
        "def kernel(xs):\n"
        "    for x in xs:\n"
        "        print(x)\n"
        "for epoch in range(3):\n"
        "    train()\n",
        tables,
    )
    assert [loop.line for loop in tables.loops_of(code)] == [8]
    (kernel,) = [c for c in code.co_consts if isinstance(c, CodeType)]
    assert tables.loops_of(kernel) == ()
    assert not any(name.startswith("__quickdev") for name in kernel.co_names)


def test_a_form_feed_line_before_a_loop_does_not_hide_the_call_in_it() -> None:
    """A page break (``^L`` on a line of its own) is one line to Python; counted as two,
    the loop's last line, its only call, fell outside it and the loop never ended."""
    ns = run_user(
        "done = []\n\x0c\nfor i in items:\n    done += [i]\n    if i == 2:\n        end_here()\n",
        items=range(10),
    )
    assert ns["done"] == [0, 1, 2]


def _lines(code: CodeType, names: dict[str, Any]) -> list[int]:
    seen: list[int] = []

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == FILE and event == "line":
            seen.append(frame.f_lineno)
        return trace

    sys.settrace(trace)
    try:
        exec(code, dict(names))
    finally:
        sys.settrace(None)
    return seen


STEPPED = """\
def work(n):
    total = 0
    i = 0
    while i < n:
        i += 1
        if i % 2:
            continue
        total += abs(i)
    for k in range(n):
        try:
            total += len(str(k))
        finally:
            total -= 1
    return total
result = work(4)
"""


def test_a_debugger_sees_the_same_line_events_as_in_the_plain_script() -> None:
    """The inserted checks have no line: stepping goes from the user's line to the
    user's next line, as under plain python (the same trace, line by line)."""
    plain = compile(STEPPED, FILE, "exec")
    rewritten = compile_user(STEPPED)
    assert _lines(rewritten, {}) == _lines(plain, {})


@pytest.mark.parametrize("flag_value", [None])
def test_the_check_reads_a_builtin_while_nothing_is_marked(flag_value: Any) -> None:
    tables = LoopTables()
    code = compile_user("for i in range(3):\n    f(i)\n", tables)
    (loop,) = tables.loops_of(code)
    import builtins

    assert getattr(builtins, loop.flag) is flag_value
    assert loop.flag in code.co_names
