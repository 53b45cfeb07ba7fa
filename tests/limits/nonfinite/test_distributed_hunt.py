"""The NaN hunt under torchrun (``--nproc 2``, real gloo): the rank whose shard holds the bad
sample finds it, and the job's merged result names that rank's finding."""

from __future__ import annotations

import json
from pathlib import Path

from tests.limits.nonfinite.test_planted_faults import SCRIPTS, hunt, line_of


def test_the_rank_that_met_the_nan_explains_the_job(tmp_path: Path) -> None:
    script = "ddp_nan_sample.py"
    run = hunt(script, tmp_path, "--nproc", "2")
    assert run.result is not None, run.stderr[-3000:]
    merged = run.result
    assert run.returncode == 1
    assert (merged["status"], merged["stop_reason"]) == ("failed", "nonfinite"), merged["error"]
    origin = merged["first_nonfinite"]
    assert origin is not None, merged["error"]
    # The corrupt reading was written when the dataset was built; index 45 is rank 1's 23rd
    # sample (the sampler deals them out in turn): its 3rd batch of 8, row 6.
    assert Path(origin["file"]) == SCRIPTS / script
    assert origin["line"] == line_of(script, "# a sensor that did not answer")
    assert (origin["phase"], origin["cause"]) == ("setup", "argument")
    assert (origin["reached"], origin["reached_step"]) == ("the loss", 3)
    assert origin["sample"]["dataset_index"] == 45 and origin["sample"]["row"] == 6
    error = merged["error"]
    assert error["type"] == "NonFiniteValue" and error["message"] == f"rank 1: {origin['message']}"
    assert (error["file"], error["line"]) == (origin["file"], origin["line"])

    ranks = {
        rank: json.loads((run.run_dir / f"rank{rank}" / "result.json").read_text())
        for rank in (0, 1)
    }
    assert ranks[1]["first_nonfinite"] == origin
    # Rank 0's shard is clean: it found nothing, and ended because rank 1 did.
    assert ranks[0]["first_nonfinite"] is None and ranks[0]["stop_reason"] != "nonfinite"
