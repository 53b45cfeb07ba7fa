"""Each native writer, in-process, under the file journal: the folder is byte-identical after
it, its file is listed among the outputs, and nothing is left to the safety net."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from quickdev.limits import journal
from quickdev.limits.journal.registry import WRITERS as REGISTRY
from quickdev.limits.journal.registry import targets
from quickdev.limits.patching import Patcher
from quickdev.rundir.ids import create_run_dir

from tests.limits.journal.native_writers import CHANGED, WRITERS, make_native_tree
from tests.limits.journal.test_writers import snapshot


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "project"
    root.mkdir()
    make_native_tree(root)
    monkeypatch.chdir(root)
    yield root


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_native_writer_leaves_the_folder_byte_identical(tree: Path, writer: str) -> None:
    before = snapshot(tree)
    run_dir = create_run_dir(tree / ".quickdev" / "runs", "run-1")
    patcher = Patcher()
    session = journal.install(patcher, run_dir)
    try:
        WRITERS[writer]()
    finally:
        patcher.undo_all()
        restored = session.finish()
    assert not restored.problems
    assert snapshot(tree) == before
    kept = {Path(o.requested).relative_to(tree).as_posix() for o in restored.outputs}
    assert set(CHANGED[writer]) <= kept
    assert restored.safety is not None and restored.safety.not_restored == []


def test_modes_that_only_read_put_nothing_aside() -> None:
    h5 = next(w for w in REGISTRY if w.library == "HDF5")
    assert targets(h5, (None, "x.h5"), {}) == []
    assert targets(h5, (None, "x.h5", "r"), {}) == []
    assert targets(h5, (None, "x.h5"), {"mode": "a"})[0][1] == "update"
    assert targets(h5, (None, "x.h5", "w"), {})[0][1] == "replace"
    sqlite = next(w for w in REGISTRY if w.library == "SQLite")
    assert targets(sqlite, (":memory:",), {}) == []
    assert targets(sqlite, ("file:x.db?mode=ro",), {}) == []
    names = [Path(p).name for p, _ in targets(sqlite, ("m.db",), {})]
    assert names == ["m.db", "m.db-journal", "m.db-wal", "m.db-shm"]
    parquet = next(w for w in REGISTRY if w.library == "Parquet")
    assert targets(parquet, (None, "s3://bucket/x.parquet"), {}) == []
    lmdb = next(w for w in REGISTRY if w.library == "LMDB")
    read_only = targets(lmdb, ("db",), {"readonly": True})
    assert [Path(p).name for p, _ in read_only] == ["lock.mdb"]
