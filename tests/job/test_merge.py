"""Merging the ranks' results: the rank that ended first explains the job."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from quickdev.job.distributed.merge import merge_file_safety, merge_results
from quickdev.options import RunOptions
from quickdev.rundir.file_safety import FileSafety, UnseenChange, YourEdit
from quickdev.rundir.result import ErrorInfo, JobResult

PEER_GONE = ErrorInfo(type="RuntimeError", message="Connection closed by peer", line=9)


def write_rank(run_dir: Path, rank: int, result: JobResult, mtime: float) -> None:
    rank_dir = run_dir / f"rank{rank}"
    rank_dir.mkdir(parents=True)
    path = result.write(rank_dir)
    os.utime(path, (mtime, mtime))


@pytest.mark.parametrize(
    ("first", "expected_status", "expected_reason"),
    [
        (JobResult(id="rank0", status="stopped", stop_reason="timeout"), "stopped", "timeout"),
        (
            JobResult(
                id="rank0", status="failed", stop_reason="error",
                error=ErrorInfo(type="ValueError", message="bad batch", file="t.py", line=3),
            ),
            "failed",
            "error",
        ),
    ],
)  # fmt: skip
def test_first_rank_to_end_sets_the_status(
    tmp_path: Path, first: JobResult, expected_status: str, expected_reason: str
) -> None:
    run_dir = tmp_path / "job"
    write_rank(run_dir, 0, first, mtime=1_000.0)
    later = JobResult(id="rank1", status="failed", stop_reason="error", error=PEER_GONE)
    write_rank(run_dir, 1, later, mtime=1_002.0)

    merged = merge_results(run_dir, RunOptions(nproc=2), started=990.0, launcher_code=1)
    assert merged["status"] == expected_status
    assert merged["stop_reason"] == expected_reason
    if expected_status == "failed":
        assert merged["error"]["message"] == "rank 0: bad batch"
        assert (merged["error"]["file"], merged["error"]["line"]) == ("t.py", 3)
    else:
        assert merged["error"] is None
    assert [r["status"] for r in merged["ranks"]] == [first.status, "failed"]


def test_a_rank_without_result_makes_a_launch_error(tmp_path: Path) -> None:
    run_dir = tmp_path / "job"
    write_rank(run_dir, 0, JobResult(id="rank0", status="passed"), mtime=1_000.0)
    merged = merge_results(
        run_dir, RunOptions(nproc=2), started=990.0, launcher_code=1, stderr=None
    )
    assert merged["status"] == "failed"
    assert merged["error"]["type"] == "DistributedLaunchError"
    assert "ranks without a result: [1]" in merged["error"]["message"]
    assert merged["ranks"][1]["status"] == "killed"


def test_every_ranks_kept_edits_and_unrestored_changes_are_in_the_job_result() -> None:
    edit = YourEdit(path="/w/notes.txt", original="/w/runs/r/rank0/originals/notes.txt")
    unseen = UnseenChange(path="/w/data.bin", change="changed", why="not Python")
    ranks = [
        FileSafety(your_edits=[edit], checked_files=3),
        FileSafety(your_edits=[edit], not_restored=[unseen], complete=False),
        None,
    ]
    merged = merge_file_safety(ranks)
    assert merged is not None
    assert (merged.your_edits, merged.not_restored, merged.complete) == ([edit], [unseen], False)
    assert merge_file_safety([None, None]) is None
