"""``process.json``: a record proves the process under its PID is the run's job only with
a matching start time and command line; anything less is never signalled."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from quickdev.rundir.process import job_record, run_alive, run_doubt, write_process_record

from tests.support.strangers import KINDS, still_running, stranger_run


def test_a_job_s_own_record_proves_it(tmp_path: Path) -> None:
    write_process_record(tmp_path)
    record = job_record(tmp_path)
    assert record is not None and record.command  # what was recorded: a command line
    assert record.doubt() is None
    assert record.alive() and run_alive(tmp_path)


@pytest.mark.parametrize("kind", KINDS)
def test_a_record_that_cannot_prove_its_process_counts_as_ended(
    tmp_path: Path, kind: str, processes: list[subprocess.Popen[bytes]]
) -> None:
    run_dir = stranger_run(tmp_path, kind, processes)
    record = job_record(run_dir)
    assert record is not None
    doubt = record.doubt()
    assert doubt is not None and f"PID {record.pid}" in doubt and "\n" not in doubt
    assert run_alive(run_dir) is False  # listed as killed, not running
    assert run_doubt(run_dir) == doubt
    assert not record.alive()
    assert still_running(processes[-1])
