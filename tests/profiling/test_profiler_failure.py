"""A profiler that fails is said as Quickdev's own error in the summary and result.json,
where it was an ERROR in job.log and a run that said passed with no trace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from quickdev.processes import EXIT_QUICKDEV_ERROR

from tests.support.paths import EXAMPLES

# torch 2.11 and older have no FunctionEvent.is_python_function: the profiler's reading
# raised there (make compat shows it on a real 2.11). Here, on the torch of the
# development venv, the compat function raises as that attribute read did: a stand-in
# for the older release (a mock of one function, said so); the job, the profiler and
# the run directory are real.
OLDER_TORCH = """
import sys
import quickdev.torch_compat as compat

def before_2_12(event):
    raise AttributeError("'FunctionEvent' object has no attribute 'is_python_function'")

compat.is_python_function = before_2_12
from quickdev.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_profiler_that_raises_is_said_in_the_summary_and_the_result(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", OLDER_TORCH, "run", "--profile", "--runs-dir", str(tmp_path),
         "--run-id", "profiled", str(EXAMPLES / "train_loop.py")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    result = json.loads((tmp_path / "profiled" / "result.json").read_text())
    assert proc.returncode == EXIT_QUICKDEV_ERROR, proc.stderr[-2000:]
    assert result["status"] == "error"
    (problem,) = result["problems"]
    assert (problem["kind"], problem["feature"]) == ("quickdev_error", "the profiler")
    assert problem["detail"].startswith("AttributeError: 'FunctionEvent' object has no attribute")
    assert result["profile"]["trace_files"] == []
    summary = proc.stderr.splitlines()
    assert any(line.startswith("quickdev: error") for line in summary), proc.stderr[-2000:]
    assert any(
        "Quickdev's own error, not your code's: the profiler failed (AttributeError" in line
        for line in summary
    ), proc.stderr[-2000:]
    assert not any(line.strip().startswith("profile:") for line in summary)  # no trace to open
