"""The Rewriter: the user's file names and lines kept, failures run as written, the cache."""

from __future__ import annotations

import ast
import logging
import traceback
from pathlib import Path
from typing import Any

import pytest
from quickdev.rewrite import Rewriter, no_location
from quickdev.rewrite.cache import CodeCache

SOURCE = b"""\
def area(w, h):
    total = 0
    total += w * h
    return total


def broken():
    raise ValueError("at line 8")
"""


class Tagging:
    """A transform that inserts ``__tagged__ = True`` (without a location) at the top of
    every function, and counts its own calls."""

    def __init__(self, key: str = "tagging 1", fail: bool = False) -> None:
        self.key = key
        self.fail = fail
        self.applied = 0
        self.seen: list[tuple[str, Any]] = []

    def wanted(self, source: str) -> bool:
        return "def " in source

    def apply(self, tree: ast.Module, source: str, filename: str) -> Any:
        self.applied += 1
        if self.fail:
            raise RuntimeError("cannot")
        names = []
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                node.body.insert(0, no_location(ast.parse("__tagged__ = True").body[0]))
                names.append(node.name)
        return tuple(names) or None

    def loaded(self, filename: str, metadata: Any) -> None:
        self.seen.append((filename, metadata))


def _run(code: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    return namespace


def test_rewritten_code_keeps_the_users_file_name_and_lines(tmp_path: Path) -> None:
    tagging = Tagging()
    rewriter = Rewriter([tagging], CodeCache(tmp_path / "cache"))
    code = rewriter.code_for(SOURCE, "/project/shapes.py")
    assert code is not None and code.co_filename == "/project/shapes.py"
    namespace = _run(code)
    assert namespace["area"](2, 3) == 6
    assert "__tagged__" in namespace["area"].__code__.co_varnames  # the transform's change
    with pytest.raises(ValueError) as raised:
        namespace["broken"]()
    frame = traceback.extract_tb(raised.value.__traceback__)[-1]
    assert (frame.filename, frame.lineno) == ("/project/shapes.py", 8)
    # The inserted statement has no line: the line table is the user's own.
    plain = compile(SOURCE, "/project/shapes.py", "exec")
    user_lines = {
        line for c in plain.co_consts if hasattr(c, "co_lines") for *_, line in c.co_lines()
    }
    rewritten = namespace["area"].__code__
    assert {line for *_, line in rewritten.co_lines()} - {None} <= user_lines
    assert tagging.seen == [("/project/shapes.py", ("area", "broken"))]


def test_the_cache_serves_the_next_job_without_parsing(tmp_path: Path) -> None:
    first = Tagging()
    Rewriter([first], CodeCache(tmp_path / "cache")).code_for(SOURCE, "/project/shapes.py")
    second = Tagging()
    rewriter = Rewriter([second], CodeCache(tmp_path / "cache"))
    code = rewriter.code_for(SOURCE, "/project/shapes.py")
    assert code is not None and _run(code)["area"](1, 1) == 1
    assert second.applied == 0 and second.seen == [("/project/shapes.py", ("area", "broken"))]
    assert (rewriter.stats.cached, rewriter.stats.rewritten) == (1, 0)


@pytest.mark.parametrize(
    "change",
    [
        lambda source, name, key: (source + b"\n# edited\n", name, key),
        lambda source, name, key: (source, "/elsewhere/shapes.py", key),
        lambda source, name, key: (source, name, "tagging 2"),
    ],
    ids=["source edited", "file moved", "transform changed"],
)
def test_an_edit_a_move_or_a_new_transform_misses_the_cache(tmp_path: Path, change: Any) -> None:
    Rewriter([Tagging()], CodeCache(tmp_path / "cache")).code_for(SOURCE, "/project/shapes.py")
    source, name, key = change(SOURCE, "/project/shapes.py", "tagging 1")
    again = Tagging(key)
    Rewriter([again], CodeCache(tmp_path / "cache")).code_for(source, name)
    assert again.applied == 1


def test_a_file_with_nothing_to_change_runs_as_written(tmp_path: Path) -> None:
    tagging = Tagging()
    rewriter = Rewriter([tagging], CodeCache(tmp_path / "cache"))
    assert rewriter.code_for(b"x = 1\n", "/project/constants.py") is None
    assert tagging.applied == 0  # not even parsed
    assert rewriter.code_for(b"class A:\n    pass\n# def here\n", "/project/a.py") is None
    assert tagging.applied == 1
    assert rewriter.code_for(b"class A:\n    pass\n# def here\n", "/project/a.py") is None
    assert tagging.applied == 1  # "nothing to change" is cached too


def test_source_python_rejects_is_left_to_pythons_own_error(tmp_path: Path) -> None:
    rewriter = Rewriter([Tagging()], CodeCache(tmp_path / "cache"))
    assert rewriter.code_for(b"def f(:\n    pass\n", "/project/bad.py") is None
    assert rewriter.code_for(b"\xff\xfe def", "/project/binary.py") is None


def test_a_failing_transform_is_left_out_with_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    failing, working = Tagging("failing 1", fail=True), Tagging("working 1")
    rewriter = Rewriter([failing, working], CodeCache(tmp_path / "cache"))
    with caplog.at_level(logging.WARNING, logger="quickdev"):
        code = rewriter.code_for(SOURCE, "/project/shapes.py")
    assert code is not None and _run(code)["area"](2, 2) == 4  # the other one applied
    assert working.seen and not failing.seen
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["/project/shapes.py: failing 1 left out (RuntimeError: cannot)"]
    # Not cached: the next job tries again, and says so again.
    Rewriter([failing, working], CodeCache(tmp_path / "cache")).code_for(
        SOURCE, "/project/shapes.py"
    )
    assert failing.applied == 2


def test_the_rewriters_own_future_imports_do_not_reach_the_users_code(tmp_path: Path) -> None:
    source = b"def f(x: int) -> None:\n    pass\n"
    code = Rewriter([Tagging()], CodeCache(None)).code_for(source, "/project/annotated.py")
    assert _run(code)["f"].__annotations__ == {"x": int, "return": None}


def test_an_unwritable_cache_is_only_a_miss(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache folder would be")
    rewriter = Rewriter([Tagging()], CodeCache(blocker / "cache"))
    code = rewriter.code_for(SOURCE, "/project/shapes.py")
    assert code is not None and _run(code)["area"](3, 3) == 9


def test_the_cache_keeps_a_bounded_number_of_entries(tmp_path: Path) -> None:
    """Each edit of a file adds an entry; the next job drops the oldest beyond the bound."""
    cache = CodeCache(tmp_path / "cache", keep=8)
    for n in range(20):
        cache.store(cache.key(b"x = %d" % n, "/p.py", "t"), None, {})
    assert len(list((tmp_path / "cache").iterdir())) == 20  # one job: no pruning on its way
    next_job = CodeCache(tmp_path / "cache", keep=8)
    next_job.store(next_job.key(b"y = 1", "/p.py", "t"), None, {})
    assert len(list((tmp_path / "cache").iterdir())) == 7  # the newest 6, and its own
