"""The options every rank of a --nproc job gets: the parent's, through JSON, unchanged."""

from __future__ import annotations

from pathlib import Path

from quickdev.job.distributed.rank import rank_options
from quickdev.options import (
    ProfileOptions,
    RunOptions,
    WarmStart,
    options_from_json,
    options_to_json,
)
from quickdev.rundir.retention import KEEP_ALL, Retention


def test_every_option_group_survives_the_trip_to_a_rank() -> None:
    options = RunOptions(
        script="train.py",
        args=["--lr", "0.1"],
        profile=ProfileOptions(warmup=2, py_profile=True),
        retention=Retention(keep_runs=3, max_size_mb=10),
        listen=("127.0.0.1", 5678),
        nproc=2,
    )
    assert options_from_json(options_to_json(options)) == options


def test_a_warm_start_stays_with_the_process_that_began_warm() -> None:
    """A rank or a spawned worker is a fresh interpreter: it starts cold, whatever the
    process that started it imported before its limits."""
    options = RunOptions(script="train.py", warm=WarmStart(forked_from=123, preloaded=("torch",)))
    assert options_from_json(options_to_json(options)).warm is None


def test_a_rank_prunes_nothing_beside_it(tmp_path: Path) -> None:
    """A rank's runs directory is the job's run directory: its siblings are other ranks."""
    parent = RunOptions(script="train.py", nproc=2, retention=Retention(keep_runs=1))
    rank = rank_options(parent, 1, tmp_path / "job")
    assert rank.retention == KEEP_ALL
    assert (rank.runs_dir, rank.run_id, rank.nproc) == (tmp_path / "job", "rank1", 1)
