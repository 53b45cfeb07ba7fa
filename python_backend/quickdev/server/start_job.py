"""``quickdev.startJob``: the command's argument, checked, becomes a ``JobRequest`` (settings
filling what it leaves out), the job interpreter is checked, and the job starts; a debug
job's answer waits until its debugpy listens."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from quickdev.analysis import analyze_file
from quickdev.analysis.knobs import suggested_args
from quickdev.analysis.module_files import module_file
from quickdev.forecast.devices import AUTO, DeviceSpecError, parse_devices
from quickdev.rundir import option_table
from quickdev.rundir.option_table import BATCHES, MAX_STEPS, TIMEOUT, Value
from quickdev.rundir.retention import Retention
from quickdev.server.app import QuickdevServer
from quickdev.server.commands import CommandError, problem, register
from quickdev.server.job_request import JobRequest, Mode
from quickdev.server.jobs import JobError
from quickdev.server.protocol import Address, StartJobAnswer
from quickdev.server.run_state import Run
from quickdev.server.runs import Runs, runs_of
from quickdev.server.types import Key, Settings

ATTACH_TIMEOUT_S = 120.0
_TORCH_PROBE = "import importlib.util as u, sys; sys.exit(0 if u.find_spec('torch') else 3)"
# Interpreters found to have torch: asked once per server.
INTERPRETERS_WITH_TORCH = Key("interpreters_with_torch", set)


def _limit_argument(name: str) -> Any:
    """The field of a startJob argument that is a limit of the option table
    (rundir/option_table.py): its bound and words come from there."""
    limit = option_table.BY_NAME[name]
    assert limit.launch is not None
    return field(default=None, metadata=problem(limit.problem(limit.launch)))


def setup(server: QuickdevServer) -> None:
    server.state.put(INTERPRETERS_WITH_TORCH, set())
    register(server, "quickdev.startJob", StartJob, start_job)


@dataclass(frozen=True)
class StartJob:
    """The ``quickdev.startJob`` argument (docs/protocol.md)."""

    script: str | None = field(
        default=None, metadata=problem('"script" must be a path, got {value!r}')
    )
    # Run as `python -m module` from cwd, instead of a script.
    module: str | None = field(
        default=None, metadata=problem('"module" must be a module name, got {value!r}')
    )
    mode: Mode | None = field(
        default=None, metadata=problem('"mode" must be one of run, profile, debug; got {value!r}')
    )
    cwd: str | None = field(default=None, metadata=problem('"cwd" must be a path, got {value!r}'))
    args: list[str] | None = field(
        default=None, metadata=problem('"args" must be a list of strings')
    )
    batches: int | None = _limit_argument(BATCHES)
    env: dict[str, str] | None = field(
        default=None, metadata=problem('"env" must be an object of strings, got {value!r}')
    )
    python: str | None = field(
        default=None, metadata=problem('"python" must be an interpreter path, got {value!r}')
    )
    maxSteps: int | None = _limit_argument(MAX_STEPS)
    timeout: float | None = _limit_argument(TIMEOUT)
    device: Literal["auto", "cpu"] | None = field(
        default=None, metadata=problem('"device" must be "auto" or "cpu", got {value!r}')
    )
    nproc: int | None = field(
        default=None, metadata=problem('"nproc" must be a whole number ≥ 1, got {value!r}')
    )
    memoryForecast: str | None = field(
        default=None,
        metadata=problem('"memoryForecast" must be "auto" or devices (24, h100), got {value!r}'),
    )
    findNonfinite: bool | None = field(
        default=None, metadata=problem('"findNonfinite" must be true or false, got {value!r}')
    )


async def start_job(ls: QuickdevServer, start: StartJob) -> StartJobAnswer:
    runs = runs_of(ls)
    request = await _job_request(ls, start)
    await check_interpreter(ls, request.interpreter)
    try:
        run = runs.jobs.start(request)
    except JobError as exc:
        raise CommandError(str(exc)) from None
    runs.runs_dirs.add(request.runs_dir)
    answer: StartJobAnswer = {"runId": run.run_id, "runDir": str(run.run_dir), "args": request.args}
    if request.mode == "debug":
        answer["attach"] = await _wait_for_attach(runs, run)
    return answer


async def _job_request(ls: QuickdevServer, start: StartJob) -> JobRequest:
    settings = ls.state.settings
    if start.module is not None and start.script is not None:
        raise CommandError('give "script" or "module" (to run as python -m), not both')
    if start.module is not None:
        script, module_cwd = _module_target(ls, start.module, start.cwd)
    elif start.script is not None:
        script, module_cwd = _script_target(start.script), None
    else:
        raise CommandError('give "script" (a file to run) or "module" (to run as python -m)')
    mode: Mode = start.mode or "run"
    folder = ls.folder_of(script) or script.parent
    cwd = Path(start.cwd or module_cwd or folder)
    if not cwd.is_dir():
        raise CommandError(f'working directory {cwd} does not exist; fix "cwd"')
    limits = _limits(start, settings, mode)
    if start.nproc is not None and start.nproc < 1:
        raise CommandError(f'"nproc" must be a whole number ≥ 1, got {start.nproc!r}')
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
        module=start.module,
        mode=mode,
        cwd=cwd,
        runs_dir=ls.runs_dir_for(folder),
        interpreter=start.python or settings.python or sys.executable,
        args=list(args),
        limits=limits,
        env=dict(start.env or {}),
        device=start.device,
        nproc=start.nproc,
        find_nonfinite=bool(start.findNonfinite),
        keep_outputs=settings.keep_outputs,
        record_shapes=settings.tensor_shapes,
        retention=Retention(settings.runs_keep, settings.runs_max_size_mb),
        memory_forecast=_memory_forecast(start.memoryForecast, settings),
    )


def _limits(start: StartJob, settings: Settings, mode: Mode) -> dict[str, Value]:
    """The option table's limits the job is given: the argument's, else the setting's; each
    checked against its bound (a setting was checked when it was read). A setting left at
    its default asks for nothing: the job's own rules decide, as from a terminal (no
    step-cost bound for the NaN hunt); nor does a setting a debug job does not take."""
    limits: dict[str, Value] = {}
    for limit in option_table.LIMITS:
        value = getattr(start, limit.launch) if limit.launch else None
        if value is not None and not limit.accepts(value):
            raise CommandError(limit.problem(str(limit.launch)).format(value=value))
        if value is None and limit.setting and (limit.debug_setting or mode != "debug"):
            value = getattr(settings, limit.name)
            if value == limit.default:
                value = None
        if value is not None:
            limits[limit.name] = value
    return limits


def _memory_forecast(asked: str | None, settings: Settings) -> str | None:
    """``--memory-forecast``'s DEVICE: "auto" (or "") is this machine's GPU, else the
    memoryForecastDevices setting; anything else names the devices itself."""
    if asked is None:
        return None
    devices = asked.strip() or AUTO
    if devices.lower() == AUTO:
        devices = ",".join([AUTO, *settings.memory_forecast_devices])
    try:
        parse_devices(devices)
    except DeviceSpecError as exc:
        raise CommandError(f'"memoryForecast": {exc}') from None
    return devices


def _script_target(given: str) -> Path:
    script = Path(given).expanduser()
    if not script.is_absolute():
        raise CommandError(f'"script" must be an absolute path, got {given!r}')
    if not script.is_file():
        raise CommandError(f"script {script} not found; save it to disk first or fix the path")
    return script


def _module_target(ls: QuickdevServer, module: str, cwd: str | None) -> tuple[Path, Path]:
    """The module's file and the folder ``python -m`` runs it from: ``cwd``, else the first
    workspace folder that holds it."""
    places = [Path(cwd).expanduser()] if cwd else ls.workspace_folders()
    for place in places:
        if (found := module_file(module, place)) is not None:
            return found, place
    where = " or ".join(str(p) for p in places) or "the workspace"
    path = module.replace(".", "/")
    raise CommandError(
        f"module {module} not found under {where} (no {path}.py or {path}/__main__.py); "
        'set "cwd" to the folder you run python -m from'
    )


async def _wait_for_attach(runs: Runs, run: Run) -> Address:
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


async def check_interpreter(ls: QuickdevServer, interpreter: str) -> None:
    """A clear message now beats a job that dies on ``import torch``."""
    checked = ls.state.get(INTERPRETERS_WITH_TORCH)
    if interpreter in checked:
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
    checked.add(interpreter)
