"""``quickdev.cancelJob``, ``listRuns`` and ``getRun``: the runs of this session and those on
disk (an earlier session, another window, a terminal), by run id."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from quickdev.rundir.layout import RESULT_FILE
from quickdev.rundir.process import run_doubt
from quickdev.server.app import QuickdevServer
from quickdev.server.commands import CommandError, NoArgument, register
from quickdev.server.protocol import CancelAnswer, RunDetail, RunList
from quickdev.server.run_processes import end_run
from quickdev.server.run_summary import run_summary, summaries_on_disk
from quickdev.server.runs import RunId, runs_of


def setup(server: QuickdevServer) -> None:
    register(server, "quickdev.cancelJob", RunId, cancel_job)
    register(server, "quickdev.listRuns", NoArgument, list_runs)
    register(server, "quickdev.getRun", RunId, get_run)


async def cancel_job(ls: QuickdevServer, which: RunId) -> CancelAnswer:
    run_id = which.runId
    runs = runs_of(ls)
    found = runs.find(run_id)
    if found.run is not None:
        return {"cancelled": await runs.jobs.cancel(found.run)}
    # A run of an earlier server, another window or a terminal: ended through its records,
    # only where they prove that the process under a PID is the run's.
    if await end_run(found.run_dir):
        return {"cancelled": True}
    doubt = run_doubt(found.run_dir)
    if doubt is not None:
        raise CommandError(f"run {run_id} was not cancelled, nothing was signalled: {doubt}")
    return {"cancelled": False}


async def list_runs(ls: QuickdevServer, _: NoArgument) -> RunList:
    runs = runs_of(ls)
    summaries = {
        run_id: run_summary(run.run_dir, run.result, run) for run_id, run in runs.jobs.runs.items()
    }
    for runs_dir in runs.known_runs_dirs():
        for summary in await asyncio.to_thread(summaries_on_disk, runs_dir):
            summaries.setdefault(summary["runId"], summary)
    ordered = sorted(summaries.values(), key=lambda s: s["runId"], reverse=True)
    return {"runs": ordered}


async def get_run(ls: QuickdevServer, which: RunId) -> RunDetail:
    run_id = which.runId
    found = runs_of(ls).find(run_id)
    # The file as the job wrote it, whatever its shape: the extension shows it as is.
    raw = _json_file(found.run_dir / RESULT_FILE)
    if found.run is not None:
        return {"run": run_summary(found.run_dir, found.run.result, found.run), "result": raw}
    result = found.result()
    if result is None:
        raise CommandError(f"the result of run {run_id} cannot be read; see {found.run_dir}")
    return {"run": run_summary(found.run_dir, result), "result": raw}


def _json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
