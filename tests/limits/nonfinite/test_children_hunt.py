"""The NaN hunt in the processes the script starts (a hogwild trainer's, fork or spawn):
the process that met the NaN checks its batches and its loss as the job's own process
does, and its finding explains the job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.limits.nonfinite.test_planted_faults import SCRIPTS, hunt, line_of


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_a_trainer_process_names_the_sample_its_nan_came_from(
    tmp_path: Path, start_method: str
) -> None:
    script = "hogwild_nan.py"
    run = hunt(script, tmp_path, script_args=("--start-method", start_method))
    assert run.result is not None, run.stderr[-3000:]
    job = run.result
    assert run.returncode == 1
    assert (job["status"], job["stop_reason"]) == ("failed", "nonfinite"), job["error"]
    origin = job["first_nonfinite"]
    assert origin is not None, job["error"]
    # The missing reading becomes NaN where the dataset makes its tensor; row 37 is the
    # 5th batch of 8, at row 5 (the hunt trains past --batches, as in the job's process).
    assert Path(origin["file"]) == SCRIPTS / script
    assert origin["line"] == line_of(script, "x = torch.tensor(self.features[index]")
    assert (origin["op"], origin["phase"], origin["cause"]) == ("torch.tensor", "data", "argument")
    assert (origin["reached"], origin["reached_step"]) == ("the loss", 5)
    assert origin["sample"] == {
        "loader": f"{SCRIPTS / script}:{line_of(script, 'loader = ')}",
        "row": 5,
        "dataset_index": 37,
    }
    children = {child["pid"]: child for child in job["children"]}
    assert sorted(c["name"] for c in children.values()) == ["Process-1", "Process-2"]
    first = job["children"][0]
    error = job["error"]
    assert error["type"] == "NonFiniteValue"
    assert error["message"] == f"process {first['name']} (pid {first['pid']}): {origin['message']}"
    assert (error["file"], error["line"]) == (origin["file"], origin["line"])
    for child in children.values():
        # Both trainers read the same rows: each found the NaN at its own 5th step.
        assert (child["status"], child["stop_reason"], child["optimizer_steps"]) == (
            "failed",
            "nonfinite",
            4,
        ), child
        own = json.loads((run.run_dir / child["run_dir"] / "result.json").read_text())
        assert own["first_nonfinite"] == origin
