"""A script written for several GPUs runs on a CPU: under ``--nproc N`` each rank has its
device, and a check for more devices than one before training is answered as a machine with
them would answer, said in the result. Each run trains (``passed`` with steps), the code after
training runs, nothing is left in the script's folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from quickdev.rundir.changes import changes
from quickdev.rundir.result import JobResult

from tests.support.idioms import copy_idioms, run_idiom

cpu_only = pytest.mark.skipif(
    torch.cuda.is_available(), reason="proves the CPU stand-in; this machine has CUDA"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_idioms(tmp_path)


@cpu_only
def test_a_two_gpu_check_under_torchrun_finds_one_device_per_rank(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "ddp_gpu_check.py", "--nproc", "2", deadline_s=120)
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("passed", "completed"), result["error"]
    assert "Unable to locate" not in run.stdout
    assert "FINAL: rank 0 trained" in run.stdout and "FINAL: rank 1 trained" in run.stdout
    assert result["optimizer_steps"] >= 2
    said = changes(JobResult.from_dict(result))
    assert any(
        line.startswith("cuda: torch.accelerator.is_available() (asked once)")
        and "answered as on a machine with 2 CUDA devices, one per rank" in line
        for line in said
    ), said
    (snapshot,) = [o for o in result["outputs"] if Path(o["requested"]).name == "snapshot.pt"]
    assert Path(snapshot["written"]).is_file()


@cpu_only
def test_a_script_that_exits_on_fewer_than_two_gpus_trains_and_says_why(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "two_gpu_check.py")
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("passed", "completed"), result["error"]
    assert "FINAL: trained" in run.stdout and result["optimizer_steps"] == 2
    lines = enumerate((project / "two_gpu_check.py").read_text().splitlines(), 1)
    line = next(n for n, text in lines if text.startswith("if torch.cuda.device_count() < 2"))
    assert result["device"]["needed"] == {f"{project / 'two_gpu_check.py'}:{line}": 2}
    assert (
        f"cuda: the script's check for 2 CUDA devices at two_gpu_check.py:{line} answered yes; "
        "each device index stands in on the cpu"
    ) in changes(JobResult.from_dict(result))
