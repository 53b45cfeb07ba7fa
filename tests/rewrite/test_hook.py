"""The import hook: the project's modules load rewritten, everything else as usual."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from quickdev.rewrite import Rewriter, after_import, install_import_hook
from quickdev.rewrite.cache import CodeCache

from tests.rewrite.test_rewriter import Tagging


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("def version():\n    return 1\n")
    (root / "pkg" / "model.py").write_text("def forward(x):\n    return x + 1\n")
    (root / "plain_constants.py").write_text("VALUE = 3\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "library_mod.py").write_text("def helper():\n    return 2\n")
    sys.path[:0] = [str(root), str(outside)]
    yield root
    sys.path[:] = [p for p in sys.path if p not in (str(root), str(outside))]
    for name in ("pkg", "pkg.model", "plain_constants", "library_mod"):
        sys.modules.pop(name, None)


def test_project_modules_load_rewritten_and_others_as_written(project: Path) -> None:
    tagging = Tagging()
    rewriter = Rewriter([tagging], CodeCache(project.parent / "cache"))
    remove = install_import_hook(rewriter, lambda path: path.startswith(str(project)))
    try:
        model = importlib.import_module("pkg.model")
        package = importlib.import_module("pkg")
        constants = importlib.import_module("plain_constants")
        library = importlib.import_module("library_mod")
    finally:
        remove()
    assert "__tagged__" in model.forward.__code__.co_varnames
    assert "__tagged__" in package.version.__code__.co_varnames
    assert model.__file__ == str(project / "pkg" / "model.py")
    assert model.forward(1) == 2 and package.version() == 1 and constants.VALUE == 3
    assert "__tagged__" not in library.helper.__code__.co_varnames
    assert [Path(name).name for name, _ in tagging.seen] == ["__init__.py", "model.py"]
    # Rewritten bytecode lives in the cache, never in the user's tree.
    assert not (project / "pkg" / "__pycache__").exists()
    assert rewriter not in [getattr(f, "rewriter", None) for f in sys.meta_path]


def test_a_module_with_a_syntax_error_fails_as_under_plain_python(project: Path) -> None:
    (project / "broken_mod.py").write_text("def f(:\n    pass\n")
    remove = install_import_hook(Rewriter([Tagging()], CodeCache(None)), lambda path: True)
    try:
        with pytest.raises(SyntaxError) as raised:
            importlib.import_module("broken_mod")
    finally:
        remove()
        sys.modules.pop("broken_mod", None)
    assert raised.value.filename == str(project / "broken_mod.py") and raised.value.lineno == 1


def test_one_finder_rewrites_and_hands_over_a_module_named_in_advance(project: Path) -> None:
    """The rewriting and the after-import patches share one finder: a module both rewritten
    and named is rewritten, then handed over once it has executed; the finder is gone from
    ``sys.meta_path`` once nothing is registered."""
    before = list(sys.meta_path)
    handed: list[tuple[str, int]] = []
    rewriter = Rewriter([Tagging()], CodeCache(project.parent / "cache"))
    remove_rewriting = install_import_hook(rewriter, lambda path: path.startswith(str(project)))
    remove_patch = after_import(["pkg.model"], lambda m: handed.append((m.__name__, m.forward(1))))
    try:
        assert len(sys.meta_path) == len(before) + 1
        model = importlib.import_module("pkg.model")
    finally:
        remove_rewriting()
        assert len(sys.meta_path) == len(before) + 1  # the patch is still registered
        remove_patch()
    assert "__tagged__" in model.forward.__code__.co_varnames
    assert handed == [("pkg.model", 2)]
    assert sys.meta_path == before
