"""Writes through symbolic links land in their targets, which the journal keeps wherever they
are (a link out of the folder to /tmp included); folders removed and made again come back
with their modes and times."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from quickdev.limits import journal
from quickdev.limits.journal.restore import Restored
from quickdev.limits.patching import Patcher
from quickdev.rundir.ids import create_run_dir


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "project"
    (root / ".quickdev" / "runs").mkdir(parents=True)  # the run history, before the user's
    monkeypatch.chdir(root)
    yield root


def journaled(root: Path, change: object) -> Restored:
    run_dir = create_run_dir(root / ".quickdev" / "runs", "run-1")
    patcher = Patcher()
    session = journal.install(patcher, run_dir)
    try:
        change()  # type: ignore[operator]
    finally:
        patcher.undo_all()
        done = session.finish()
    assert not done.problems, done.problems
    return done


def stamp(path: Path) -> tuple[bytes, int, int]:
    st = path.stat()
    return path.read_bytes(), st.st_mode, st.st_mtime_ns


@pytest.mark.parametrize("mode", ["a", "r+", "w"])
def test_a_write_through_a_link_out_of_the_folder_is_put_back(
    project: Path, tmp_path: Path, mode: str
) -> None:
    # The target is in the temporary directory, a place the journal otherwise leaves alone.
    outside = tmp_path / "shared" / "metrics.log"
    outside.parent.mkdir()
    outside.write_bytes(b"the user's metrics\n")
    os.utime(outside, ns=(1_600_000_000_000_000_000, 1_500_000_000_000_000_000))
    (project / "metrics.log").symlink_to(outside)
    before = stamp(outside)

    def change() -> None:
        with open("metrics.log", mode) as f:
            f.write("the job's line\n")
        assert "the job's line" in outside.read_text()

    done = journaled(project, change)
    assert stamp(outside) == before
    assert (project / "metrics.log").readlink() == outside
    (kept,) = [o for o in done.outputs if o.requested == str(outside)]
    assert kept.written is not None and "the job's line" in Path(kept.written).read_text()


def test_a_write_through_a_link_inside_the_folder_is_put_back_at_its_target(
    project: Path,
) -> None:
    (project / "data").mkdir()
    (project / "data" / "labels.csv").write_text("a,b\n")
    (project / "latest.csv").symlink_to("data/labels.csv")
    before = stamp(project / "data" / "labels.csv")

    def change() -> None:
        with open("latest.csv", "r+") as f:
            f.write("X")
        with open("latest.csv", "a") as f:
            f.write("c,d\n")

    journaled(project, change)
    assert stamp(project / "data" / "labels.csv") == before
    assert (project / "latest.csv").is_symlink()


def test_folders_removed_and_made_again_get_their_modes_and_times_back(project: Path) -> None:
    private = project / "private"
    (private / "keys").mkdir(parents=True)
    (private / "keys" / "id.txt").write_text("secret")
    os.chmod(private / "keys", 0o700)
    os.chmod(private, 0o750)
    for i, folder in enumerate([private / "keys", private, project]):
        os.utime(folder, ns=(1_600_000_000_000_000_000 + i, 1_500_000_000_000_000_000 + i))
    before = {p: (p.stat().st_mode, p.stat().st_mtime_ns) for p in (private / "keys", private)}
    project_mtime = project.stat().st_mtime_ns

    def change() -> None:
        shutil.rmtree("private")
        os.makedirs("private/keys")  # 0o755 under the usual umask
        Path("private/keys/id.txt").write_text("the job's")
        Path("new.txt").write_text("new")

    journaled(project, change)
    after = {p: (p.stat().st_mode, p.stat().st_mtime_ns) for p in before}
    assert after == before
    assert (private / "keys" / "id.txt").read_text() == "secret"
    assert not (project / "new.txt").exists()
    assert project.stat().st_mtime_ns == project_mtime
