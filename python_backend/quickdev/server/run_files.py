"""The run history on disk: ``quickdev.deleteRun``, and finishing killed jobs.

A job killed mid-run (SIGKILL, a power cut) leaves its result at ``running`` and the
user's files changed until a quickdev command settles the one and puts back the other;
the language server does so when it starts, for the runs directory of each workspace
folder, and says so in one line per run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types

from quickdev.limits.journal.recover import recover
from quickdev.rundir.killed import settle_killed
from quickdev.rundir.layout import DEFAULT_RUNS_DIR
from quickdev.rundir.retention import delete_run
from quickdev.server.app import QuickdevServer
from quickdev.server.commands import CommandError, register
from quickdev.server.log import log
from quickdev.server.protocol import DeleteAnswer
from quickdev.server.runs import RunId, runs_of


def setup(server: QuickdevServer) -> None:
    register(server, "quickdev.deleteRun", RunId, delete)


async def delete(ls: QuickdevServer, which: RunId) -> DeleteAnswer:
    run_id = which.runId
    found = runs_of(ls).find(run_id)
    if found.run is not None and not found.run.finished.is_set():
        raise CommandError(f"run {run_id} is still running; cancel it first")
    try:
        await asyncio.to_thread(delete_run, found.run_dir, found.run is not None)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"cannot delete {found.run_dir} ({exc.strerror or exc})") from None
    runs_of(ls).jobs.runs.pop(run_id, None)
    return {"deleted": run_id}


async def recover_at_start(ls: QuickdevServer) -> None:
    """Give killed jobs their final status and put back what they left changed, in every
    workspace folder's runs directory (the configured one, and the default a terminal's
    ``quickdev run`` there uses) and in the server's working folder's (the first workspace
    folder, as the editor starts it)."""
    folders = [*ls.workspace_folders(), Path.cwd()]
    candidates = [*runs_of(ls).known_runs_dirs(), *(f / DEFAULT_RUNS_DIR for f in folders)]
    for runs_dir in dict.fromkeys(p.resolve() for p in candidates):
        try:
            for line in await asyncio.to_thread(settle_killed, runs_dir):
                log.info("%s", line)  # the Runs view shows the status; the log says why
            lines = await asyncio.to_thread(recover, runs_dir)
        except Exception:
            log.exception("restoring the files of killed jobs under %s failed", runs_dir)
            continue
        for line in lines:
            log.info("%s", line)
            ls.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Info, message=line)
            )
