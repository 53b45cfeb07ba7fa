"""Processes the script starts for training are part of the job: limited, reported in
result.json, their output in the run's output, ended with the job, and none of them
outlives a SIGKILL of the command.

The scripts under children_scripts/ are small faithful copies of public code: a hogwild
trainer (pytorch/examples mnist_hogwild), an ``mp.spawn`` DDP trainer (the DDP
tutorial's multigpu.py, its training in a class or in the worker function) and a
``Pool.map`` preprocessing step before training.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from quickdev.job.children.lifetime import descendants
from quickdev.processes import pid_alive

SCRIPTS = Path(__file__).parent / "children_scripts"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    shutil.copytree(SCRIPTS, folder)
    return folder


def _run(run_quickdev: Any, project: Path, *args: str) -> Any:
    run = run_quickdev("--runs-dir", str(project.parent / "runs"), *args, cwd=project, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.result is not None, run.stderr
    return run


def _children(result: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {child["pid"]: child for child in result["children"]}


def test_hogwild_trainers_are_limited_and_reported(run_quickdev: Any, project: Path) -> None:
    run = _run(run_quickdev, project, "hogwild.py")
    result = run.result
    children = _children(result)
    assert sorted(c["name"] for c in children.values()) == ["Process-1", "Process-2"]
    for pid, child in children.items():
        # One epoch (the script's --epochs set to 1) of 2 batches, in each process.
        assert (child["status"], child["optimizer_steps"], child["batches"]) == (
            "passed",
            2,
            2,
        ), child
        own = (project.parent / "runs" / result["id"] / child["run_dir"]).resolve()
        assert (own / "result.json").is_file()
        # Its output is in the run's output, and the terminal's.
        assert f"{pid}\tTrain Epoch: 1 [1]" in run.stdout
        assert f"{pid}\tTrain Epoch: 1 [1]" in (run.run_dir / "output.log").read_text()
    assert "Test set: Accuracy" in run.stdout  # the parent went on after its children
    assert result["status"] == "passed"
    assert result["optimizer_steps"] == 4 and len(result["losses"]) == 4
    lines = (SCRIPTS / "hogwild.py").read_text().splitlines()
    train_at, test_at = (str(n) for n, line in enumerate(lines, 1) if "DataLoader(" in line)
    origins = sorted(loader["origin"].rpartition(":")[2] for loader in result["loaders"])
    assert origins == [train_at, train_at, test_at]  # each process's training loader, the test
    assert result["limits"]["one_epoch_options"] == ["--epochs"]


def test_mp_spawn_ranks_run_under_the_device_stand_in(run_quickdev: Any, project: Path) -> None:
    run = _run(run_quickdev, project, "spawn_trainer.py", "--", "50", "--world_size", "2")
    result = run.result
    children = _children(result)
    assert sorted(c["name"] for c in children.values()) == ["SpawnProcess-1", "SpawnProcess-2"]
    for child in children.values():
        # Each rank trains one epoch; its second ends the epoch loop (train_passes), in
        # step with the other rank, so neither waits for the other at a collective, and
        # the rank goes on to leave its process group.
        assert (child["status"], child["stop_reason"]) == ("passed", "completed"), child
        assert child["optimizer_steps"] == 2
    assert "all ranks done" in run.stdout
    log = (run.run_dir / "output.log").read_text()
    assert "[GPU0] Epoch 0" in log and "[GPU1] Epoch 0" in log
    assert result["status"] == "passed" and result["optimizer_steps"] == 4
    remaps = result["device"]["remaps"]
    assert remaps["init_process_group nccl -> gloo"] == 2
    assert remaps["DistributedDataParallel device_ids"] == 2


def test_a_ranks_process_group_destroyed_right_after_a_step_lets_the_rank_end(
    run_quickdev: Any, project: Path
) -> None:
    """gloo's worker thread frees a gradient all-reduce's work under the GIL; a group
    destroyed right after the step joined that worker with the GIL held, and the rank
    never ended (each of four jobs of eight rounds hung until killed). No limits: every
    round runs."""
    run = _run(run_quickdev, project, "--no-limits", "--timeout", "120", "ddp_teardown.py", "8")
    assert "rank 0: 8 rounds" in run.stdout and "rank 1: 8 rounds" in run.stdout
    assert run.result["status"] == "passed"
    assert run.result["device"]["remaps"]["init_process_group nccl -> gloo"] == 16


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_spawned_workers_epoch_loop_ends_and_the_code_after_it_runs(
    run_quickdev: Any, project: Path, method: str
) -> None:
    """The worker function is defined in the script, which a spawned process re-runs as
    ``__mp_main__``: its loops get their exits as the job's own do, so the train_passes
    budget ends the epoch loop (a new loader each epoch: no pass of a loader is the second)
    and the rank goes on to save its model."""
    args = ("spawn_epochs.py", "--", "5", "--start-method", method)
    run = _run(run_quickdev, project, *args)
    result = run.result
    children = _children(result)
    assert len(children) == 2, children
    lines = (SCRIPTS / "spawn_epochs.py").read_text().splitlines()
    epoch_loop = next(n for n, line in enumerate(lines, 1) if "for epoch in" in line)
    log = (run.run_dir / "output.log").read_text()
    for child in children.values():
        # One epoch of 2 batches, not 5; the rank ran to its end.
        assert (child["status"], child["optimizer_steps"], child["batches"]) == (
            "passed",
            2,
            2,
        ), child
        own = json.loads((run.run_dir / child["run_dir"] / "result.json").read_text())
        ended = [(loop["line"], loop["role"], loop["budget"]) for loop in own["loops_ended"]]
        assert ended == [(epoch_loop, "epoch", "train_passes")], own["loops_ended"]
    for rank in (0, 1):
        assert f"[rank{rank}] saved after 1 epoch(s)" in log, log
        assert f"[rank{rank}] epoch 1 done" not in log, log
    # The script's main block ran in the job only, not again in its ranks.
    assert log.count("launching the ranks") == 1, log
    assert "all ranks done" in run.stdout
    assert result["status"] == "passed" and result["optimizer_steps"] == 4


def test_pool_workers_preprocess_then_the_parent_trains(run_quickdev: Any, project: Path) -> None:
    run = _run(run_quickdev, project, "pool_prep.py")
    result = run.result
    children = _children(result)
    assert sorted(c["name"] for c in children.values()) == ["ForkPoolWorker-1", "ForkPoolWorker-2"]
    log = (run.run_dir / "output.log").read_text()
    workers = {int(line.split()[1]) for line in log.splitlines() if line.startswith("worker ")}
    assert workers and workers <= set(children), (workers, children)
    assert log.count("encodes document") == 8  # one line per chunk of 8, none lost
    assert "encoded 64 documents" in run.stdout
    assert result["optimizer_steps"] == 2  # the parent's training, limited


# Processes that leave without a word: ``os._exit`` skips multiprocessing's exit (a pool
# worker ended by its pool's terminate() has no say either).
EXITS_AT_ONCE = """
import multiprocessing as mp
import os


def work(tag):
    print(f"{tag} first line", flush=True)
    print(f"{tag} last line", flush=True)
    os._exit(0)


if __name__ == "__main__":
    for method in ("fork", "spawn"):
        p = mp.get_context(method).Process(target=work, args=(method,))
        p.start()
        p.join()
    print("parent done", flush=True)
"""


def test_a_process_that_leaves_at_once_keeps_its_output(run_quickdev: Any, tmp_path: Path) -> None:
    (tmp_path / "exits.py").write_text(EXITS_AT_ONCE)
    run = run_quickdev("--runs-dir", str(tmp_path / "runs"), "exits.py", cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    log = (run.run_dir / "output.log").read_text()
    for method in ("fork", "spawn"):
        assert f"{method} first line\n{method} last line\n" in log, log
    assert "parent done" in log
    children = run.result["children"]
    assert len(children) == 2, children  # both ran as part of the job, neither said how it ended
    assert {(c["status"], c["stop_reason"]) for c in children} == {("killed", "ended")}


def _wait_for(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def _start(project: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    out = project.parent / "out.log"
    command = [sys.executable, "-m", "quickdev", "run", "--runs-dir", str(project.parent / "runs")]
    with out.open("wb") as sink:
        proc = subprocess.Popen([*command, *args], cwd=project, stdout=sink, stderr=sink)
    return proc, out


# Work that outlasts the deadline on an idle machine too: an epoch is --batches (2) steps
# of a few milliseconds, so a thousand epochs could end before it.
TIMEOUT_CASES = {
    "hogwild-fork": ("hogwild.py", "--epochs", "1000000", "--start-method", "fork"),
    "hogwild-spawn": ("hogwild.py", "--epochs", "1000000"),
    # About a minute of work for the pool on an idle machine.
    "pool": ("pool_prep.py", "--documents", "8000", "--length", "200000"),
}


@pytest.mark.parametrize("case", sorted(TIMEOUT_CASES))
def test_a_timeout_ends_the_children_with_the_job(
    project: Path, processes: list[subprocess.Popen[bytes]], case: str
) -> None:
    script, *args = TIMEOUT_CASES[case]
    # The wall clock counts from the job's start, torch's import included, in the job and
    # again in each spawned process: on a busy 2-core machine that is 10 s and more, and a
    # budget spent by then would end the job before its processes had begun their work.
    timeout_s = 20
    proc, out = _start(project, "--timeout", str(timeout_s), "--json", script, "--", *args)
    processes.append(proc)
    seen: set[int] = set()

    def children_running() -> bool:
        # The resource tracker and the script's processes.
        seen.update(descendants(proc.pid))
        return len(seen) >= 2 or proc.poll() is not None

    _wait_for(children_running, 60, "the script's processes")
    proc.wait(timeout=120)
    returned = time.time()
    assert proc.returncode == 0, out.read_text()
    result = json.loads(out.read_text().strip().splitlines()[-1])
    assert (result["status"], result["stop_reason"]) == ("stopped", "timeout")
    # The processes were at work when the deadline came, and it ended them: otherwise
    # this test proves nothing.
    ended = [
        c for c in result["children"] if (c["status"], c["stop_reason"]) == ("stopped", "timeout")
    ]
    assert ended, result["children"]
    # A child that had begun its work says how it ended: at the deadline, or ended by
    # the job (one still starting up when the job ended has nothing to say).
    for child in result["children"]:
        assert child["status"] in ("stopped", "killed"), child
    # The command returns seconds after the deadline, not minutes (``started`` is to the
    # second, rounded down: this may count up to a second too many). Usually under a
    # second; a pool's workers stopped in the middle of a task have taken up to 10 s (the
    # job's SIGTERM, then SIGKILL grace for processes that do not end).
    deadline = datetime.fromisoformat(result["started"]).timestamp() + timeout_s
    assert returned - deadline < 12, returned - deadline
    _wait_for(lambda: not any(pid_alive(pid) for pid in seen), 10, "no process left")


SIGKILL_CASES = {
    "hogwild-spawn": (("hogwild.py", "--", "--epochs", "1000"), "Train Epoch"),
    "hogwild-fork": (
        ("hogwild.py", "--", "--epochs", "1000", "--start-method", "fork"),
        "Train Epoch",
    ),
    "mp-spawn": (
        ("--train-passes", "0", "spawn_trainer.py", "--", "1000", "--world_size", "2"),
        "[GPU1]",
    ),
    "pool": (("pool_prep.py", "--", "--documents", "800", "--length", "200000"), "encodes"),
}


@pytest.mark.parametrize("case", sorted(SIGKILL_CASES))
def test_no_process_of_the_job_outlives_a_sigkill_of_the_command(
    project: Path, processes: list[subprocess.Popen[bytes]], case: str
) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the parent-death signal is Linux's")
    args, working = SIGKILL_CASES[case]
    proc, out = _start(project, "--timeout", "120", *args)
    processes.append(proc)
    _wait_for(lambda: working in out.read_text(errors="replace"), 120, "the children at work")
    tree = descendants(proc.pid)
    assert len(tree) >= 2, tree
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    _wait_for(lambda: not any(pid_alive(pid) for pid in tree), 10, "no process left")
