"""A library's loop (code the job did not rewrite) is ended by a jump past it, where the
statement after it is a plain jump away; elsewhere the budget stops the script instead."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from types import FrameType

import pytest
from quickdev.limits.loops import library

SOURCE = """
def sample(n, at, end):
    out = []
    for t in range(n):
        out.append(t)
        at(t, end)
    return len(out)


def in_with(n, at, end):
    import contextlib
    out = []
    with contextlib.nullcontext():
        for t in range(n):
            out.append(t)
            at(t, end)
    return len(out)


def under_if(n, at, end):
    out = []
    if n:
        while len(out) < n:
            out.append(1)
            at(len(out), end)
    return len(out)
"""


@pytest.fixture
def module(tmp_path: Path) -> dict[str, object]:
    path = tmp_path / "somelib.py"
    path.write_text(textwrap.dedent(SOURCE))
    namespace: dict[str, object] = {"__name__": "somelib"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def _end_at_three(ender: library.LibraryEnder, ended: list[str]) -> object:
    def at(t: int, end: object) -> None:
        if t != 3:
            return
        frame: FrameType = sys._getframe(1)
        found = library.innermost(frame, lambda filename: False)
        assert found is not None
        assert found[0] is frame and found[1].function == frame.f_code.co_name
        if not ender.end(*found, lambda: ended.append(frame.f_code.co_name)):
            ended.append("refused")

    return at


@pytest.mark.parametrize(("function", "ran"), [("sample", 4), ("under_if", 3)])
def test_a_loop_with_a_statement_after_it_ends_at_its_head(
    module: dict[str, object], function: str, ran: int
) -> None:
    ender = library.LibraryEnder()
    ended: list[str] = []
    result = module[function](1000, _end_at_three(ender, ended), None)  # type: ignore[operator]
    # The round that was running finished; the loop went no further.
    assert (result, ended) == (ran, [function])
    assert ender.armed is None and sys.gettrace() is None


def test_a_loop_that_ends_a_with_block_is_left_to_the_budget(module: dict[str, object]) -> None:
    ender = library.LibraryEnder()
    ended: list[str] = []
    assert module["in_with"](100, _end_at_three(ender, ended), None) == 100  # type: ignore[operator]
    assert ended == ["refused"] and sys.gettrace() is None


def test_under_a_tracer_no_loop_is_jumped(module: dict[str, object]) -> None:
    ender = library.LibraryEnder()
    ended: list[str] = []

    def tracer(frame: FrameType, event: str, arg: object) -> None:
        return None

    sys.settrace(tracer)
    try:
        result = module["sample"](100, _end_at_three(ender, ended), None)  # type: ignore[operator]
    finally:
        sys.settrace(None)
    assert (result, ended) == (100, ["refused"])


@pytest.mark.parametrize(
    ("name", "sampling"),
    [("generate", True), ("p_sample_loop", True), ("ddim_sample", True), ("evaluate", False)],
)
def test_sampling_loops_are_told_from_evaluation_loops_by_their_function(
    name: str, sampling: bool
) -> None:
    assert library.is_sampling(name) is sampling
