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


@cpu_only
def test_a_check_for_more_devices_than_stood_in_ends_the_script_and_it_trained_nothing(
    run_quickdev: Any, project: Path
) -> None:
    """The verdict's no_training: the script exits 0 before its training loop; it is not a
    pass, and the result says which check was answered no."""
    before = sorted(p.name for p in project.iterdir())
    run = run_quickdev(
        "--runs-dir",
        str(project.parent / "runs"),
        str(project / "sixteen_gpu_check.py"),
        cwd=project,
    )
    assert sorted(p.name for p in project.iterdir()) == before
    result = run.result
    assert (result["status"], result["error"]["type"]) == ("failed", "NoTrainingStep")
    assert [p["kind"] for p in result["problems"]] == ["no_training"]
    lines = (project / "sixteen_gpu_check.py").read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "< 16" in text)
    assert (
        f"cuda: the script's check for 16 CUDA devices at sixteen_gpu_check.py:{line} "
        "answered no: the stand-in gives at most 8"
    ) in changes(JobResult.from_dict(result))


@cpu_only
def test_the_scripts_that_trained_have_no_problem(run_quickdev: Any, project: Path) -> None:
    result = run_idiom(run_quickdev, project, "two_gpu_check.py").result
    assert (result["status"], result["problems"]) == ("passed", [])
