"""The runs of this session: the job manager, and what the editor is told of each run.

Every change of a run is sent as ``quickdev/runChanged`` and, when the run ends, turned
into diagnostics. ``Runs.find`` is the one way features look a run up by its id (this
session's, else on disk). The commands live in start_job.py and run_commands.py.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types

from quickdev.rundir.ids import is_run_id
from quickdev.rundir.layout import RESULT_FILE
from quickdev.rundir.result import JobResult
from quickdev.rundir.validate import read_result_checked
from quickdev.server.app import QuickdevServer
from quickdev.server.commands import CommandError, problem
from quickdev.server.diagnostics import FailureDiagnostics
from quickdev.server.jobs import JobManager, Launcher, launch_cold
from quickdev.server.lenses import client_refreshes_lenses
from quickdev.server.protocol import RunSummary
from quickdev.server.run_state import Run
from quickdev.server.run_summary import run_summary
from quickdev.server.types import Key

RUN_CHANGED = "quickdev/runChanged"


@dataclass(frozen=True)
class FoundRun:
    """A run looked up by id: its directory, and the live run when this session started it."""

    run_dir: Path
    run: Run | None = None

    def result(self) -> JobResult | None:
        return (
            self.run.result if self.run and self.run.result else read_result_checked(self.run_dir)
        )


class Runs:
    """The job manager plus what the server shows about its runs."""

    def __init__(
        self, ls: QuickdevServer, launch: Launcher, on_finished: Callable[[Run], None]
    ) -> None:
        self.ls = ls
        self.on_finished = on_finished
        self.jobs = JobManager(on_change=self.changed, launch=launch)
        self.diagnostics = FailureDiagnostics()
        # Runs directories jobs of this session wrote to, beside the workspace folders'.
        self.runs_dirs: set[Path] = set()

    def changed(self, run: Run) -> None:
        summary = run_summary(run.run_dir, run.result, run)
        self.noted(summary)
        self.ls.protocol.notify(RUN_CHANGED, summary)
        if run.finished.is_set():
            self.on_finished(run)
            for uri in self.diagnostics.record(run):
                self.publish_diagnostics(uri)

    def publish_diagnostics(self, uri: str) -> None:
        self.ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=self.diagnostics.for_uri(uri))
        )

    def noted(self, *summaries: RunSummary) -> None:
        """A memory forecast newer than the script's lens shows: the lenses are asked again."""
        newer = [self.ls.state.forecasts.note(summary) for summary in summaries]
        if any(newer) and client_refreshes_lenses(self.ls):
            self.ls.workspace_code_lens_refresh(None)

    def known_runs_dirs(self) -> list[Path]:
        dirs = {self.ls.runs_dir_for(f) for f in self.ls.workspace_folders()} | self.runs_dirs
        return sorted(dirs)

    def find(self, run_id: str) -> FoundRun:
        """The run ``run_id`` of this session, else on disk; CommandError when there is none."""
        run = self.jobs.runs.get(run_id)
        if run is not None:
            return FoundRun(run.run_dir, run)
        if not is_run_id(run_id):
            raise CommandError(f'"runId" must be the name of a run directory, got {run_id!r}')
        for runs_dir in self.known_runs_dirs():
            candidate = runs_dir / run_id
            if (candidate / RESULT_FILE).is_file():
                return FoundRun(candidate)
        raise CommandError(
            f"no run {run_id} in this session or the runs directories; refresh the runs list"
        )


RUNS = Key("runs", Runs)


def runs_of(ls: QuickdevServer) -> Runs:
    return ls.state.get(RUNS)


def setup(
    server: QuickdevServer,
    launch: Launcher = launch_cold,
    on_finished: Callable[[Run], None] = lambda run: None,
) -> None:
    """``launch``: how jobs start (the warm start passes its own, server/main.py);
    ``on_finished``: told of each run of this session that ended (the shape hints)."""
    runs = Runs(server, launch, on_finished)
    server.state.put(RUNS, runs)
    atexit.register(runs.jobs.kill_all)

    @server.feature(types.SHUTDOWN)
    def on_shutdown(ls: QuickdevServer, params: None) -> None:
        runs.jobs.kill_all()
        cancel_pending_requests(ls)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def on_edit(ls: QuickdevServer, params: types.DidChangeTextDocumentParams) -> None:
        # An edit of a failing line takes its diagnostic away (diagnostics.py says the rule).
        uri = runs.diagnostics.edited(params.text_document.uri, params.content_changes)
        if uri is not None:
            runs.publish_diagnostics(uri)


def cancel_pending_requests(ls: QuickdevServer) -> None:
    """Cancel every request still being answered, except the shutdown itself.

    pygls does the same right after this handler, but while iterating over the dict
    that a cancelled request removes itself from, so a pending startJob made shutdown
    fail ("dictionary changed size during iteration") and the editor saw a crash.
    Cancelled here, over a copy, they leave pygls nothing to cancel.
    """
    protocol = ls.protocol
    for msg_id, future in list(protocol._request_futures.items()):
        if msg_id != protocol.msg_id and not future.done():
            future.cancel()


@dataclass(frozen=True)
class RunId:
    runId: str = field(metadata=problem('"runId" must be a run id, got {value!r}'))
