"""A project with a virtualenv inside (``python -m venv``), as most are: a job that changes
none of the person's files names none, and says in words what it did not check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.limits.journal.test_manifest import many_files, project, venv

SCRIPT = """\
import torch
torch.save({"w": torch.zeros(2)}, "model.pt")
print("saved")
"""


def test_12000_files_with_a_venv_inside_and_no_false_report(tmp_path: Path) -> None:
    root = project(tmp_path / "project")
    venv(root / "env-3.11", 12_000)
    many_files(root / "data", 300)
    (root / "model.pt").write_bytes(b"the person's model")
    (root / "train.py").write_text(SCRIPT)
    runs = tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, "-m", "quickdev", "run", "--runs-dir", str(runs), "train.py"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (run_dir,) = (p for p in runs.iterdir() if p.is_dir())
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "passed", done.stderr
    safety = result["file_safety"]
    assert safety["not_restored"] == [], done.stderr
    assert "not put back" not in done.stderr
    assert safety["not_checked"] == {str(root / "env-3.11"): "a Python environment"}
    assert safety["complete"] and safety["checked_files"] >= 300
    line = "not checked for other programs' changes: env-3.11 (a Python environment)"
    assert line in done.stderr, done.stderr
    assert (root / "model.pt").read_bytes() == b"the person's model"
