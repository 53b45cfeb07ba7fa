"""What the server asks of a job: the request ``quickdev.startJob`` becomes, and the
``quickdev run`` command line that carries it to the job process. No LSP here.

Every option the editor can set reaches the job through ``job_command``: the job parses it
as a terminal's ``quickdev run`` would (``quickdev.cli``), so a job started by the server
and one typed in a terminal are the same job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from quickdev.rundir import option_table
from quickdev.rundir.option_table import Value
from quickdev.rundir.retention import RETENTION, Retention

Mode = Literal["run", "profile", "debug"]


@dataclass
class JobRequest:
    script: Path
    mode: Mode
    cwd: Path
    runs_dir: Path
    interpreter: str
    args: list[str] = field(default_factory=list)
    # The option table's limits the job is given (by name); the others take their defaults.
    limits: dict[str, Value] = field(default_factory=dict)
    # Variables the user gave (launch configuration env/envFile): over the server's own.
    env: dict[str, str] = field(default_factory=dict)
    device: Literal["auto", "cpu"] | None = None
    nproc: int | None = None
    keep_outputs: bool = False
    record_shapes: bool = True  # off: --no-shapes
    retention: Retention = RETENTION
    find_nonfinite: bool = False  # the NaN hunt (--find-nonfinite)
    module: str | None = None  # run as `python -m module`; `script` is then the module's file
    # --memory-forecast DEVICE (forecast/devices.py); None: no forecast.
    memory_forecast: str | None = None


def job_command(request: JobRequest, run_id: str) -> list[str]:
    """``<python> -m quickdev run --run-id ID --runs-dir DIR ... SCRIPT -- ARGS`` (or ``-m
    MODULE`` for the script): quickdev's own options before the script, the script's after it."""
    command = [request.interpreter, "-m", "quickdev", "run", "--run-id", run_id]
    command += ["--runs-dir", str(request.runs_dir)]
    for limit in option_table.LIMITS:
        if limit.name in request.limits:
            command += [limit.flag, str(request.limits[limit.name])]
    if request.keep_outputs:
        command.append("--keep-outputs")
    if not request.record_shapes:
        command.append("--no-shapes")
    if request.retention != RETENTION:
        command += ["--runs-keep", str(request.retention.keep_runs)]
        command += ["--runs-max-size-mb", str(request.retention.max_size_mb)]
    if request.mode == "profile":
        command.append("--profile")
    if request.device is not None:
        command += ["--device", request.device]
    if request.nproc is not None and request.nproc > 1:
        command += ["--nproc", str(request.nproc)]
    if request.memory_forecast is not None:
        command.append(f"--memory-forecast={request.memory_forecast}")
    if request.find_nonfinite:
        command.append("--find-nonfinite")
    if request.mode == "debug":
        command += ["--listen", "127.0.0.1:0", "--wait-for-client"]
    target = ["-m", request.module] if request.module else [str(request.script)]
    return [*command, *target, "--", *request.args]
