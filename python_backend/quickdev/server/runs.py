"""The job commands: ``quickdev.startJob``, ``cancelJob``, ``listRuns``, ``getRun``.

Every change of a run is sent as ``quickdev/runChanged`` and, when the run ends, turned
into diagnostics. ``Runs.find`` is the one way features look a run up by its id.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lsprotocol import types

from quickdev.analysis import analyze_file
from quickdev.analysis.knobs import suggested_args
from quickdev.rundir.ids import is_run_id
from quickdev.rundir.layout import RESULT_FILE
from quickdev.rundir.result import JobResult
from quickdev.rundir.retention import Retention
from quickdev.rundir.validate import read_result_checked
from quickdev.server.app import QuickdevServer
from quickdev.server.commands import Answer, CommandError, parse_argument, problem, register
from quickdev.server.diagnostics import FailureDiagnostics
from quickdev.server.jobs import JobError, JobManager, JobRequest, Mode, Run
from quickdev.server.run_processes import end_run
from quickdev.server.run_summary import run_summary, summaries_on_disk
from quickdev.server.types import Key

RUN_CHANGED = "quickdev/runChanged"
ATTACH_TIMEOUT_S = 120.0
_TORCH_PROBE = "import importlib.util as u, sys; sys.exit(0 if u.find_spec('torch') else 3)"


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

    def __init__(self, ls: QuickdevServer) -> None:
        self.ls = ls
        self.jobs = JobManager(on_change=self.changed)
        self.diagnostics = FailureDiagnostics()
        self.runs_dirs: set[Path] = set()
        self._interpreters_with_torch: set[str] = set()

    def changed(self, run: Run) -> None:
        self.ls.protocol.notify(RUN_CHANGED, run_summary(run.run_dir, run.result, run))
        if run.finished.is_set():
            for uri in self.diagnostics.record(run):
                self.publish_diagnostics(uri)

    def publish_diagnostics(self, uri: str) -> None:
        self.ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=self.diagnostics.for_uri(uri))
        )

    async def check_interpreter(self, interpreter: str) -> None:
        """A clear message now beats a job that dies on ``import torch``."""
        if interpreter in self._interpreters_with_torch:
            return
        try:
            proc = await asyncio.to_thread(
                subprocess.run,
                [interpreter, "-c", _TORCH_PROBE],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "it did not answer in 60 s"
            raise CommandError(
                f"cannot run the job interpreter {interpreter} ({reason}); set quickdev.python "
                "to the python of your training environment"
            ) from None
        if proc.returncode == 3:
            raise CommandError(
                f"the job interpreter {interpreter} has no torch; set quickdev.python to an "
                "interpreter with torch installed"
            )
        if proc.returncode != 0:
            raise CommandError(
                f"the job interpreter {interpreter} failed to start (exit {proc.returncode}); "
                "set quickdev.python to the python of your training environment"
            )
        self._interpreters_with_torch.add(interpreter)

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


def setup(server: QuickdevServer) -> None:
    runs = Runs(server)
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

    register(server, "quickdev.startJob", start_job)
    register(server, "quickdev.cancelJob", cancel_job)
    register(server, "quickdev.listRuns", list_runs)
    register(server, "quickdev.getRun", get_run)


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
class StartJob:
    """The ``quickdev.startJob`` argument (docs/protocol.md)."""

    script: str = field(metadata=problem('"script" must be a path, got {value!r}'))
    mode: Mode | None = field(
        default=None, metadata=problem('"mode" must be one of run, profile, debug; got {value!r}')
    )
    cwd: str | None = field(default=None, metadata=problem('"cwd" must be a path, got {value!r}'))
    args: list[str] | None = field(
        default=None, metadata=problem('"args" must be a list of strings')
    )
    batches: int | None = field(
        default=None, metadata=problem('"batches" must be a whole number ≥ 1, got {value!r}')
    )
    env: dict[str, str] | None = field(
        default=None, metadata=problem('"env" must be an object of strings, got {value!r}')
    )
    python: str | None = field(
        default=None, metadata=problem('"python" must be an interpreter path, got {value!r}')
    )
    maxSteps: int | None = field(
        default=None, metadata=problem('"maxSteps" must be a whole number ≥ 1, got {value!r}')
    )
    timeout: float | None = field(
        default=None, metadata=problem('"timeout" must be seconds > 0, got {value!r}')
    )
    device: Literal["auto", "cpu"] | None = field(
        default=None, metadata=problem('"device" must be "auto" or "cpu", got {value!r}')
    )
    nproc: int | None = field(
        default=None, metadata=problem('"nproc" must be a whole number ≥ 1, got {value!r}')
    )


@dataclass(frozen=True)
class RunId:
    runId: str = field(metadata=problem('"runId" must be a run id, got {value!r}'))


async def start_job(ls: QuickdevServer, argument: dict[str, Any]) -> Answer:
    runs = runs_of(ls)
    request = await _job_request(ls, parse_argument(argument, StartJob))
    await runs.check_interpreter(request.interpreter)
    try:
        run = runs.jobs.start(request)
    except JobError as exc:
        raise CommandError(str(exc)) from None
    runs.runs_dirs.add(request.runs_dir)
    answer: Answer = {"runId": run.run_id, "runDir": str(run.run_dir), "args": request.args}
    if request.mode == "debug":
        answer["attach"] = await _wait_for_attach(runs, run)
    return answer


async def _job_request(ls: QuickdevServer, start: StartJob) -> JobRequest:
    settings = ls.state.settings
    script = Path(start.script).expanduser()
    if not script.is_absolute():
        raise CommandError(f'"script" must be an absolute path, got {start.script!r}')
    if not script.is_file():
        raise CommandError(f"script {script} not found; save it to disk first or fix the path")
    mode: Mode = start.mode or "run"
    folder = ls.folder_of(script) or script.parent
    cwd = Path(start.cwd or folder)
    if not cwd.is_dir():
        raise CommandError(f'working directory {cwd} does not exist; fix "cwd"')
    batches = settings.batches if start.batches is None else start.batches
    if batches < 1:
        raise CommandError(f'"batches" must be a whole number ≥ 1, got {batches!r}')
    for name, value in (("maxSteps", start.maxSteps), ("nproc", start.nproc)):
        if value is not None and value < 1:
            raise CommandError(f'"{name}" must be a whole number ≥ 1, got {value!r}')
    if start.timeout is not None and start.timeout <= 0:
        raise CommandError(f'"timeout" must be seconds > 0, got {start.timeout!r}')
    args = start.args
    if args is None:
        # The job keeps the promises (one epoch, budgets) itself, as from a terminal; only
        # an explicit batch size setting changes an argument.
        args = []
        if settings.batch_size:
            analysis = await asyncio.to_thread(analyze_file, script)
            args = suggested_args(analysis.knobs, settings.batch_size) if analysis else []
    return JobRequest(
        script=script,
        mode=mode,
        cwd=cwd,
        runs_dir=ls.runs_dir_for(folder),
        interpreter=start.python or settings.python or sys.executable,
        args=list(args),
        batches=batches,
        env=dict(start.env or {}),
        max_steps=start.maxSteps,
        timeout_s=start.timeout,
        device=start.device,
        nproc=start.nproc,
        keep_outputs=settings.keep_outputs,
        retention=Retention(settings.runs_keep, settings.runs_max_size_mb),
    )


async def _wait_for_attach(runs: Runs, run: Run) -> dict[str, Any]:
    try:
        await asyncio.wait_for(run.attach_settled.wait(), ATTACH_TIMEOUT_S)
    except TimeoutError:
        await runs.jobs.cancel(run)
        raise CommandError(
            f"debugpy did not listen within {ATTACH_TIMEOUT_S:.0f} s; the job was cancelled "
            f"(its output is in {run.run_dir})"
        ) from None
    if run.attach is not None:
        return run.attach.to_json()
    reason = run.failure.message if run.failure else f"it ended as {run.status}"
    raise CommandError(f"the debug job ended before debugpy listened: {reason}")


async def cancel_job(ls: QuickdevServer, argument: dict[str, Any]) -> Answer:
    run_id = parse_argument(argument, RunId).runId
    runs = runs_of(ls)
    found = runs.find(run_id)
    if found.run is not None:
        return {"cancelled": await runs.jobs.cancel(found.run)}
    # A run of an earlier server, another window or a terminal: ended through its records.
    return {"cancelled": await end_run(found.run_dir)}


async def list_runs(ls: QuickdevServer, argument: dict[str, Any]) -> Answer:
    runs = runs_of(ls)
    summaries = {
        run_id: run_summary(run.run_dir, run.result, run) for run_id, run in runs.jobs.runs.items()
    }
    for runs_dir in runs.known_runs_dirs():
        for summary in await asyncio.to_thread(summaries_on_disk, runs_dir):
            summaries.setdefault(summary["runId"], summary)
    ordered = sorted(summaries.values(), key=lambda s: s["runId"], reverse=True)
    return {"runs": ordered}


async def get_run(ls: QuickdevServer, argument: dict[str, Any]) -> Answer:
    run_id = parse_argument(argument, RunId).runId
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
