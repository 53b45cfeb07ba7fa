"""The file journal follows the job's child processes: Python children started by
``subprocess``, ``os.system`` and ``multiprocessing`` (spawn and fork) write, overwrite and
delete the user's files, and the folder is byte-identical after the job."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.limits.journal import writers
from tests.limits.journal.test_writers import snapshot

CHILDREN = """
import multiprocessing, os, subprocess, sys
from pathlib import Path
import writers

def in_child(name):
    writers.WRITERS[name]()

def start(method, name):
    child = multiprocessing.get_context(method).Process(target=in_child, args=(name,))
    child.start()
    child.join()
    assert child.exitcode == 0, (method, name)

if __name__ == "__main__":
    subprocess.run([sys.executable, "writers.py", "torch_save_path", "open_x"], check=True)
    assert os.system(f'"{sys.executable}" writers.py remove') == 0
    start("spawn", "open_a")
    start("fork", "rmtree_outputs")
    # The job reads what its children wrote.
    assert Path("model.pt").read_bytes()[:2] == b"PK", "torch.save's zip, from a child"
    assert Path("new.txt").read_text() == "new"
    assert not Path("notes.txt").exists()
    assert Path("logs/train.log").read_text().endswith("epoch 2\\n")
    assert os.listdir("checkpoints") == ["new.ckpt"]
    print("read its own writes")
"""


def test_python_children_are_journaled(run_quickdev: Any, tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    writers.make_user_tree(root)
    shutil.copy(writers.__file__, root / "writers.py")
    (root / "children.py").write_text(CHILDREN)
    before = snapshot(root)
    run = run_quickdev("children.py", cwd=root)
    assert run.returncode == 0, run.stderr
    assert run.result["status"] == "passed", run.result.get("error")
    assert "read its own writes" in run.stdout
    assert snapshot(root) == before
    kept = {
        Path(o["requested"]).relative_to(root).as_posix(): o["change"]
        for o in run.result["outputs"]
    }
    assert kept["model.pt"] == "changed"
    assert kept["new.txt"] == "created"
    assert kept["notes.txt"] == "deleted"
    assert kept["logs/train.log"] == "appended"  # cut back; the run dir has the new lines
    assert kept["checkpoints/new.ckpt"] == "created"
    outputs = run.run_dir / "outputs"
    assert (outputs / "logs" / "train.log").read_text() == "epoch 2\n"
