"""The job commands: ``quickdev.startJob``, ``cancelJob``, ``listRuns``, ``getRun``.

Every change of a run is sent as ``quickdev/runChanged``, reported as work-done progress,
and, when the run ends, turned into diagnostics.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types

from quickdev.analysis import analyze_file
from quickdev.analysis.knobs import suggested_args
from quickdev.processes import pid_alive
from quickdev.rundir.layout import ATTACH_FILE, RESULT_FILE
from quickdev.rundir.result import JobResult, read_result
from quickdev.server.app import QuickdevServer
from quickdev.server.commands import Answer, CommandError, register, string_field
from quickdev.server.diagnostics import FailureDiagnostics
from quickdev.server.jobs import MODES, JobError, JobManager, JobRequest, Mode, Run
from quickdev.server.log import log
from quickdev.server.progress import RunProgress

RUN_CHANGED = "quickdev/runChanged"
ATTACH_TIMEOUT_S = 120.0
_TORCH_PROBE = "import importlib.util as u, sys; sys.exit(0 if u.find_spec('torch') else 3)"


class Runs:
    """The job manager plus what the server shows about its runs."""

    def __init__(self, ls: QuickdevServer) -> None:
        self.ls = ls
        self.jobs = JobManager(on_change=self.changed)
        self.diagnostics = FailureDiagnostics()
        self.progress: dict[str, RunProgress] = {}
        self.runs_dirs: set[Path] = set()
        self._interpreters_with_torch: set[str] = set()

    def changed(self, run: Run) -> None:
        self.ls.protocol.notify(RUN_CHANGED, run.summary())
        progress = self.progress.get(run.run_id)
        if progress is not None:
            progress.update()
        if run.finished.is_set():
            self.progress.pop(run.run_id, None)
            for uri in self.diagnostics.record(run):
                self.ls.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(
                        uri=uri, diagnostics=self.diagnostics.for_uri(uri)
                    )
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

    def find_run_dir(self, run_id: str) -> Path | None:
        for runs_dir in self.known_runs_dirs():
            candidate = runs_dir / run_id
            if (candidate / RESULT_FILE).is_file():
                return candidate
        return None


def setup(server: QuickdevServer) -> None:
    runs = Runs(server)
    server.state.runs = runs
    atexit.register(runs.jobs.kill_all)

    @server.feature(types.SHUTDOWN)
    def on_shutdown(ls: QuickdevServer, params: None) -> None:
        runs.jobs.kill_all()
        cancel_pending_requests(ls)

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


def runs_state(ls: QuickdevServer) -> Runs:
    runs = ls.state.runs
    assert isinstance(runs, Runs)
    return runs


async def start_job(ls: QuickdevServer, argument: dict[str, Any]) -> Answer:
    runs = runs_state(ls)
    request = await _job_request(ls, argument)
    await runs.check_interpreter(request.interpreter)
    try:
        run = runs.jobs.start(request)
    except JobError as exc:
        raise CommandError(str(exc)) from None
    runs.runs_dirs.add(request.runs_dir)
    progress = RunProgress(ls, run)
    runs.progress[run.run_id] = progress
    await progress.begin(lambda: asyncio.ensure_future(runs.jobs.cancel(run)))
    answer: Answer = {"runId": run.run_id, "runDir": str(run.run_dir), "args": request.args}
    if request.mode == "debug":
        answer["attach"] = await _wait_for_attach(runs, run)
    return answer


async def _job_request(ls: QuickdevServer, argument: dict[str, Any]) -> JobRequest:
    settings = ls.state.settings
    script = Path(string_field(argument, "script", required=True) or "").expanduser()
    if not script.is_absolute():
        raise CommandError(f'"script" must be an absolute path, got {str(script)!r}')
    if not script.is_file():
        raise CommandError(f"script {script} not found; save it to disk first or fix the path")
    break_at = argument.get("breakAt")
    if break_at is not None and not (
        isinstance(break_at, dict)
        and isinstance(break_at.get("file"), str)
        and isinstance(break_at.get("line"), int)
    ):
        raise CommandError('"breakAt" must be {"file": path, "line": int}')
    mode = argument.get("mode") or ("debug" if break_at else "run")
    if mode not in MODES:
        raise CommandError(f'"mode" must be one of run, profile, debug; got {mode!r}')
    if break_at is not None and mode != "debug":
        raise CommandError('"breakAt" needs "mode": "debug"')
    folder = ls.folder_of(script) or script.parent
    cwd = Path(string_field(argument, "cwd") or folder)
    if not cwd.is_dir():
        raise CommandError(f'working directory {cwd} does not exist; fix "cwd"')
    batches = argument.get("batches", settings.batches)
    if isinstance(batches, bool) or not isinstance(batches, int) or batches < 1:
        raise CommandError(f'"batches" must be a whole number ≥ 1, got {batches!r}')
    args = argument.get("args")
    if args is None:
        analysis = await asyncio.to_thread(analyze_file, script)
        args = suggested_args(analysis.knobs, batches) if analysis else []
    elif not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
        raise CommandError('"args" must be a list of strings')
    checked_mode: Mode = mode
    return JobRequest(
        script=script,
        mode=checked_mode,
        cwd=cwd,
        runs_dir=ls.runs_dir_for(folder),
        interpreter=settings.python or sys.executable,
        args=list(args),
        batches=batches,
        break_at=break_at,
    )


async def _wait_for_attach(runs: Runs, run: Run) -> dict[str, Any]:
    deadline = time.monotonic() + ATTACH_TIMEOUT_S
    while run.attach is None and not run.finished.is_set() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    if run.attach is not None:
        return run.attach
    if run.finished.is_set():
        reason = (run.failure or {}).get("message") or f"it ended as {run.status}"
        raise CommandError(f"the debug job ended before debugpy listened: {reason}")
    await runs.jobs.cancel(run)
    raise CommandError(
        f"debugpy did not listen within {ATTACH_TIMEOUT_S:.0f} s; the job was cancelled "
        f"(its output is in {run.run_dir})"
    )


async def cancel_job(ls: QuickdevServer, argument: dict[str, Any]) -> Answer:
    run_id = string_field(argument, "runId", required=True) or ""
    run = runs_state(ls).jobs.runs.get(run_id)
    if run is None:
        raise CommandError(f"no run {run_id} was started by this session; nothing to cancel")
    return {"cancelled": await runs_state(ls).jobs.cancel(run)}


async def list_runs(ls: QuickdevServer, argument: dict[str, Any]) -> Answer:
    runs = runs_state(ls)
    summaries = {run_id: run.summary() for run_id, run in runs.jobs.runs.items()}
    for runs_dir in runs.known_runs_dirs():
        for summary in await asyncio.to_thread(_summaries_on_disk, runs_dir):
            summaries.setdefault(summary["runId"], summary)
    ordered = sorted(summaries.values(), key=lambda s: s["runId"], reverse=True)
    return {"runs": ordered}


async def get_run(ls: QuickdevServer, argument: dict[str, Any]) -> Answer:
    runs = runs_state(ls)
    run_id = string_field(argument, "runId", required=True) or ""
    run = runs.jobs.runs.get(run_id)
    run_dir = run.run_dir if run else runs.find_run_dir(run_id)
    if run_dir is None:
        raise CommandError(f"no run {run_id} in this session or the runs directories")
    result = _result_json(run_dir)
    if run is not None:
        return {"run": run.summary(), "result": result}
    parsed = _read(run_dir)
    if parsed is None:
        raise CommandError(f"the result of run {run_id} cannot be read; see {run_dir}")
    return {"run": summary_from_result(parsed, run_dir), "result": result}


def summary_from_result(result: JobResult, run_dir: Path) -> dict[str, Any]:
    """A ``RunSummary`` for a run found on disk (started earlier or from a terminal)."""
    profiled = result.profile is not None and bool(result.profile.trace_files)
    status = result.status
    if status == "running" and not _job_alive(run_dir):
        status = "killed"  # it died without writing its end (SIGKILL, power loss)
    summary: dict[str, Any] = {
        "runId": result.id or run_dir.name,
        "script": result.script,
        "mode": "profile" if profiled else "run",
        "status": status,
        "started": result.started,
        "runDir": str(run_dir),
        "durationS": result.duration_s,
        "batches": sum(loader.batches for loader in result.loaders),
        "losses": list(result.losses),
    }
    if result.error is not None:
        summary["error"] = {
            "message": f"{result.error.type}: {result.error.message}",
            "file": result.error.file,
            "line": result.error.line,
        }
    return summary


def _job_alive(run_dir: Path) -> bool:
    """Whether the job that writes ``run_dir`` still runs; unknown counts as alive."""
    info = _json_file(run_dir / ATTACH_FILE)
    pid = info.get("pid") if isinstance(info, dict) else None
    if not isinstance(pid, int) or pid <= 0:
        return True  # not started far enough to say, or a distributed parent
    return pid_alive(pid)


def _summaries_on_disk(runs_dir: Path) -> list[dict[str, Any]]:
    try:
        run_dirs = [d for d in runs_dir.iterdir() if (d / RESULT_FILE).is_file()]
    except OSError:
        return []
    found = []
    for run_dir in run_dirs:
        result = _read(run_dir)
        if result is not None:
            found.append(summary_from_result(result, run_dir))
    return found


def _read(run_dir: Path) -> JobResult | None:
    try:
        return read_result(run_dir)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        log.info("unreadable result in %s: %s", run_dir, exc)
        return None


def _result_json(run_dir: Path) -> Any:
    return _json_file(run_dir / RESULT_FILE)


def _json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
