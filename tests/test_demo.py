"""``make demo``, the README's first command: its job must pass, not only exit 0, and
what it prints must be true.

A job stopped by a budget exits 0 too, and a quickdev option written after the script is
the script's argument (the example then exits with "unrecognized arguments"), so the check
reads what the demo printed and what its run recorded. The example changes none of the
person's files, so a summary naming one as not put back is false: the repository's own
virtualenv (``make venv``, more files than the start manifest's bound) once read as
10,000 files created.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

STAMP = ".venv/.installed"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_runs_the_example_and_its_job_passes(tmp_path: Path) -> None:
    runs_dir = tmp_path / "runs"
    # -o: the venv this test runs in is set up already; BIN: its quickdev.
    make = ["make", "-s", "-o", STAMP, "demo", f"BIN={Path(sys.executable).parent}"]
    proc = subprocess.run(
        [*make, f"DEMO_RUNS_DIR={runs_dir}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "quickdev: passed  examples/train_loop.py" in output, output
    (run_dir,) = (path for path in runs_dir.iterdir() if path.is_dir())
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "passed", output
    assert result["argv"][1:] == [], "quickdev's own options reached the script"
    assert result["optimizer_steps"] > 0
    # Read as a newcomer reads it: every summary line is calm and true.
    summary = output[output.index("quickdev: passed") :].splitlines()
    for line in summary:
        assert not line.strip().startswith(("not put back", "error:")), output
        assert "Traceback" not in line and "JournalError" not in line, output
    safety = result["file_safety"]
    assert safety["not_restored"] == [], output
    venv = REPO / ".venv"
    if (venv / "pyvenv.cfg").is_file():
        # The virtualenv is left out of the check, and said to be, in words.
        assert safety["not_checked"][str(venv)] == "a Python environment"
        assert ".venv (a Python environment)" in output, output
