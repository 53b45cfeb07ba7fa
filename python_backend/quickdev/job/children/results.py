"""The job's result, with the work of the processes the script started.

Merged as a distributed job's ranks are: a line per process (``children``), and its
error (and the NaN hunt's finding) as the job's when it failed and the script did not.
Unlike ranks (one program run N times, rank 0 speaking for all), the children divide the
work among themselves (a hogwild trainer's processes, a pool's workers), so the job's
steps, hand-made batches, losses, loaders and device remaps are the sum of its
processes': the script's first, then each child's in the order they started.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from quickdev.job.failure import labelled_error
from quickdev.limits.budget import NONFINITE
from quickdev.limits.recorder import MAX_RECORDED_LOSSES
from quickdev.rundir.jsonio import read_json_object
from quickdev.rundir.layout import CHILD_FILE, CHILDREN_DIR
from quickdev.rundir.nonfinite_origin import NonfiniteOrigin
from quickdev.rundir.result import (
    ChildProcess,
    DeviceRemaps,
    JobResult,
    read_result,
)
from quickdev.rundir.verdict import add_problem


def merge_children(result: JobResult, run_dir: Path) -> bool:
    """Add the children's results to ``result``; True when a child's failure is now the
    job's (the script itself passed or stopped at a budget)."""
    found = []
    folder = run_dir / CHILDREN_DIR
    for child_dir in sorted(folder.iterdir()) if folder.is_dir() else []:
        info = read_json_object(child_dir / CHILD_FILE)
        child = read_result(child_dir)
        if info is None or child is None:
            continue
        if child.status == "running":  # killed before it could write (SIGKILL)
            child.status, child.stop_reason = "killed", "ended"
        found.append((child.started, str(info.get("name", "")), child_dir.name, child))
    failed: ChildProcess | None = None
    nonfinite: NonfiniteOrigin | None = None
    for _, name, pid, child in sorted(found, key=lambda item: (item[0], int(item[2]))):
        line = ChildProcess(
            pid=int(pid),
            name=name,
            status=child.status,
            run_dir=f"{CHILDREN_DIR}/{pid}",
            optimizer_steps=child.optimizer_steps,
            batches=sum(loader.batches for loader in child.loaders) + child.loop_batches,
            stop_reason=child.stop_reason,
            error=child.error,
        )
        result.children.append(line)
        result.optimizer_steps += child.optimizer_steps
        result.loop_batches += child.loop_batches
        result.loaders = [*result.loaders, *child.loaders]
        _add_device(result, child)
        room = max(MAX_RECORDED_LOSSES - len(result.losses), 0)
        result.losses = [*result.losses, *child.losses[:room]]
        for problem in child.problems:
            labelled = dataclasses.replace(problem, message=f"{name}: {problem.message}")
            add_problem(result.problems, labelled)
        if failed is None and child.status == "failed":
            failed, nonfinite = line, child.first_nonfinite
    if failed is None or result.status not in ("passed", "stopped"):
        return False
    result.status, result.stop_reason = "failed", "error"
    result.error = labelled_error(f"process {failed.name} (pid {failed.pid})", failed.error)
    if nonfinite is not None:  # the NaN hunt's finding, as a rank's explains a distributed job
        result.stop_reason, result.first_nonfinite = NONFINITE, nonfinite
    return True


def _add_device(result: JobResult, child: JobResult) -> None:
    """The child's device remaps and stood-in answers count in the job's."""
    if child.device is None:
        return
    if result.device is None:
        result.device = DeviceRemaps(requested=child.device.requested, actual=child.device.actual)
    for mine, theirs in (
        (result.device.remaps, child.device.remaps),
        (result.device.answered, child.device.answered),
    ):
        for key, n in theirs.items():
            mine[key] = mine.get(key, 0) + n
