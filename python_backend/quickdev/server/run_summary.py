"""The ``RunSummary`` of docs/protocol.md: one builder for runs of this session and on disk.

A run this server started is summarised from what it knows live (mode, stage, attach
address) and its result once written; a run found on disk (an earlier session, a terminal)
from its result alone.
"""

from __future__ import annotations

import time
from pathlib import Path

from quickdev.rundir.changes import changes
from quickdev.rundir.ids import is_run_id, iso_utc
from quickdev.rundir.jsonio import finite_json
from quickdev.rundir.layout import RESULT_FILE, STDOUT_FILE
from quickdev.rundir.process import run_alive
from quickdev.rundir.result import JobResult
from quickdev.rundir.validate import read_result_checked
from quickdev.rundir.verdict import headline as verdict_lines
from quickdev.server.protocol import RunSummary
from quickdev.server.run_state import FINISHED, Run
from quickdev.server.types import Failure


def run_summary(run_dir: Path, result: JobResult | None, run: Run | None = None) -> RunSummary:
    """The summary of the run in ``run_dir``; ``run`` when this server started it."""
    if run is None and result is None:
        raise ValueError("a run on disk is summarised from its result")
    # A training step that took no DataLoader batch made its batch by hand: it counts.
    batches = (
        sum(loader.batches for loader in result.loaders) + result.loop_batches if result else 0
    )
    summary: RunSummary = {
        "runId": run.run_id if run else _id_on_disk(run_dir, result),
        "script": str(run.script) if run else (result.script if result else ""),
        "args": list(run.request.args) if run else _args_on_disk(result),
        "mode": run.request.mode if run else _mode_on_disk(result),
        "status": run.status if run else _status_on_disk(result, run_dir),
        "started": _started(run, result),
        "runDir": str(run_dir),
        "resultFile": str((run_dir / RESULT_FILE).absolute()),
        "outputFile": str((run_dir / STDOUT_FILE).absolute()),
        "durationS": _duration(run, result),
        "batches": max(batches, run.batches_done if run else 0),
        "losses": finite_json(list(result.losses)) if result else [],
        "changes": changes(result) if result else [],
        "verdict": verdict_lines(result) if result else [],
    }
    module = run.request.module if run else _module_on_disk(result)
    if module is not None:
        summary["module"] = module
    if result is not None and result.memory_forecast is not None:
        summary["memoryForecast"] = result.memory_forecast.headline()
    # A NaN hunt stays one when it is run again.
    hunted = run.request.find_nonfinite if run else bool(result and result.limits.find_nonfinite)
    if hunted:
        summary["findNonfinite"] = True
    failure = run.failure if run else _failure_on_disk(result)
    if failure is not None:
        summary["error"] = failure.to_json()
    if run is not None:
        summary["stage"] = run.stage
        summary["steps"] = max(run.steps, result.optimizer_steps if result else 0)
        if run.attach is not None:
            summary["attach"] = run.attach.to_json()
    return summary


def summaries_on_disk(runs_dir: Path) -> list[RunSummary]:
    """Every readable run under ``runs_dir``; a malformed result is skipped, not fatal."""
    try:
        run_dirs = [d for d in runs_dir.iterdir() if (d / RESULT_FILE).is_file()]
    except OSError:
        return []
    found = []
    for run_dir in run_dirs:
        result = read_result_checked(run_dir)
        if result is not None:
            found.append(run_summary(run_dir, result))
    return found


def _id_on_disk(run_dir: Path, result: JobResult | None) -> str:
    # An id the file claims is used as a path later: only a plain name is taken.
    return result.id if result and is_run_id(result.id) else run_dir.name


def _args_on_disk(result: JobResult | None) -> list[str]:
    # argv as the script saw it: its path, then its arguments.
    return [str(arg) for arg in result.argv[1:]] if result else []


def _module_on_disk(result: JobResult | None) -> str | None:
    # A job run as `python -m` records the module's name where a script's absolute path goes.
    script = result.script if result else ""
    return script if script and not Path(script).is_absolute() else None


def _mode_on_disk(result: JobResult | None) -> str:
    profile = result.profile if result else None
    return "profile" if profile is not None and profile.trace_files else "run"


def _failure_on_disk(result: JobResult | None) -> Failure | None:
    return Failure.of_error(result.error) if result and result.error else None


def _status_on_disk(result: JobResult | None, run_dir: Path) -> str:
    status = result.status if result else "running"
    if status == "running" and not _job_alive(run_dir):
        return "killed"  # it died without writing its end (SIGKILL, power loss)
    return status


def _started(run: Run | None, result: JobResult | None) -> str:
    if run is None:
        return result.started if result else ""
    return iso_utc(run.started)


def _duration(run: Run | None, result: JobResult | None) -> float:
    if run is None:
        return result.duration_s if result else 0.0
    if result is not None and result.duration_s > 0 and run.status in FINISHED:
        return result.duration_s
    return round((run.ended or time.time()) - run.started, 3)


def _job_alive(run_dir: Path) -> bool:
    """Whether the job that writes ``run_dir`` still runs; unknown counts as alive."""
    return run_alive(run_dir) is not False
