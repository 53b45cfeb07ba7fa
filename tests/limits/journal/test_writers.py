"""Each writer, in-process, under the file journal: the user's tree is as it was afterwards."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from quickdev.limits import journal
from quickdev.limits.patching import Patcher
from quickdev.rundir.ids import create_run_dir
from quickdev.rundir.result import Output

from tests.limits.journal.writers import WRITERS, make_user_tree


def snapshot(root: Path) -> dict[str, str]:
    """Every file's hash and every folder, outside the run history."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(".quickdev"):
            continue
        found[relative] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "project"
    root.mkdir()
    make_user_tree(root)
    monkeypatch.chdir(root)
    yield root


def run_journaled(tree: Path, writer: str) -> list[Output]:
    run_dir = create_run_dir(tree / ".quickdev" / "runs", "run-1")
    patcher = Patcher()
    session = journal.install(patcher, run_dir)
    try:
        WRITERS[writer]()
    finally:
        patcher.undo_all()
        restored = session.finish()
    assert not restored.problems
    return restored.outputs


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_tree_is_byte_identical_after_the_writer(tree: Path, writer: str) -> None:
    before = snapshot(tree)
    outputs = run_journaled(tree, writer)
    assert snapshot(tree) == before
    assert outputs, "the job's files are listed"
    run_dir = tree / ".quickdev" / "runs" / "run-1"
    for output in outputs:
        assert output.written is None or Path(output.written).is_relative_to(run_dir / "outputs")
        assert output.written is None or Path(output.written).exists()


def test_the_jobs_version_is_kept_at_the_same_relative_path(tree: Path) -> None:
    outputs = run_journaled(tree, "torch_save_path")
    kept = {Path(o.requested).relative_to(tree).as_posix(): o for o in outputs}
    assert kept["model.pt"].change == "changed"
    assert kept["checkpoints/epoch-0.pt"].change == "created"
    assert kept["model.pt"].written == str(tree / ".quickdev/runs/run-1/outputs/model.pt")
    import torch

    assert torch.load(kept["model.pt"].written)["w"].shape == (3,)


def test_a_deleted_file_is_listed_as_deleted(tree: Path) -> None:
    outputs = run_journaled(tree, "remove")
    assert [(Path(o.requested).name, o.written, o.change) for o in outputs] == [
        ("notes.txt", None, "deleted")
    ]
