"""The edit watcher never takes the job's own writes for the person's: a file written over and
over (a checkpoint each step, a log appended to), while the kernel merges its notices, is put
back at the end, and no edit of the person's is claimed."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from quickdev.limits import journal
from quickdev.limits.patching import Patcher
from quickdev.rundir.ids import create_run_dir

from tests.limits.journal.test_writers import snapshot
from tests.limits.journal.writers import make_user_tree


def test_a_file_the_job_writes_again_and_again_is_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    make_user_tree(root)
    monkeypatch.chdir(root)
    before = snapshot(root)
    run_dir = create_run_dir(root / ".quickdev" / "runs", "run-1")
    patcher = Patcher()
    session = journal.install(patcher, run_dir)
    assert session.watcher is not None, "Linux has inotify: the watcher runs"

    def writes(name: str) -> None:
        for step in range(300):
            Path(name).write_text(f"step {step}")
            Path(f"checkpoints/{name}-{step % 3}").write_text("new")
            with open("logs/train.log", "a") as log:
                log.write(f"{name} {step}\n")

    try:
        threads = [threading.Thread(target=writes, args=(n,)) for n in ("model.pt", "notes.txt")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        patcher.undo_all()
        restored = session.finish()
    assert not restored.problems
    assert restored.your_edits == []
    assert restored.safety is not None and restored.safety.not_restored == []
    assert snapshot(root) == before
