"""The options of one quick-dev job, shared by the command line and the in-process API, and
as JSON by the processes that run a part of the job (ranks, spawned workers).

Kept free of torch imports: the command line parses these before torch loads.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from quickdev.rundir import option_table
from quickdev.rundir.layout import DEFAULT_RUNS_DIR
from quickdev.rundir.option_table import (
    HUNT_STEPS,
    STEP_SECONDS,
    Value,
)
from quickdev.rundir.retention import RETENTION, Retention

# "auto", "cpu", "cuda" or "cuda:N"; the command line checks the form.
Device = str

# What ``--find-nonfinite`` does, for ``quickdev run --help``, beside the budget it quotes.
HUNT_HELP = (
    "run until the first NaN/Inf reaches the loss, a gradient or a parameter (default budget "
    f"{HUNT_STEPS} steps) and name the operation that made it; under the debugger, "
    "stop there"
)


@dataclass(frozen=True)
class WarmStart:
    """How a job forked from a warm process (``quickdev.warm``) began: handed by the warm
    process to the job's ``__main__`` (as the global ``WARM_START_GLOBAL``), then carried
    in ``RunOptions.warm``."""

    forked_from: int  # the warm process's PID, for the job's log
    # What the warm process imported for the job: names these modules took from torch
    # before the limits existed are pointed at the limited versions (limits/rebind.py).
    preloaded: tuple[str, ...] = ()


WARM_START_GLOBAL = "warm_start"


@dataclass
class ProfileOptions:
    """torch.profiler settings; the schedule defaults fit a 2-batch run."""

    wait: int = 0
    warmup: int = 1
    active: int = 1
    repeat: int = 1
    record_shapes: bool = True
    with_stack: bool = True
    profile_memory: bool = False
    py_profile: bool = False
    torch_trace: bool = True  # off when only --py-profile was asked for


@dataclass
class RunOptions:
    """What to run and under which limits."""

    script: str | None = None  # a path, or None when ``module`` is set
    module: str | None = None
    args: list[str] = field(default_factory=list)
    # The limits given, by their names in the option table (rundir/option_table.py); one
    # not given takes its default, and 0 switches a budget off (see Budget.for_options).
    limits: dict[str, Value] = field(default_factory=dict)
    device: Device = "auto"
    runs_dir: Path = DEFAULT_RUNS_DIR
    name: str | None = None
    run_id: str | None = None  # chosen by the caller (the language server) or generated
    profile: ProfileOptions | None = None
    sample_interval_s: float | None = 0.5  # CPU/GPU/memory sampler; None switches it off
    listen: tuple[str, int] | None = None  # debugpy address, started by the job itself
    wait_for_client: bool = False
    client_timeout_s: float = 300.0  # with wait_for_client: give up (stopped) after this long
    print_json: bool = False
    no_limits: bool = False
    # The job's files stay where it writes them; the file journal is off (said in the result).
    keep_outputs: bool = False
    # The tensors each line of the user's code bound, recorded for the editor (SHAPES_FILE).
    record_shapes: bool = True
    retention: Retention = RETENTION  # the run history pruned at the job's start
    nproc: int = 1  # > 1: local ranks under torch.distributed.run, a result each plus a merged one
    debug_rank: int | None = None  # with nproc > 1: the one rank that runs under debugpy
    warm: WarmStart | None = None  # set in a job forked from a warm process; None: cold
    # --memory-forecast [DEVICE]: None: no forecast; "auto", or the devices to compare with
    # ("24,40,80", "h100"; see forecast/devices.py).
    memory_forecast: str | None = None
    # The NaN hunt: run until the first NaN/Inf reaches the loss, a gradient or a parameter,
    # and name the operation that produced it (limits/nonfinite).
    find_nonfinite: bool = False
    # --full-batch: every step at the script's own batch size, whatever --step-seconds says
    # (see step_cost_bound).
    full_batch: bool = False


def options_to_json(options: RunOptions) -> str:
    """The options another process starts its part of the job from (a rank, a spawned
    worker). A warm start is how this process began, never how that one does: it is a
    fresh interpreter, with nothing imported before its limits."""
    data = dataclasses.asdict(dataclasses.replace(options, warm=None))
    data["runs_dir"] = str(options.runs_dir)
    return json.dumps(data)


def options_from_json(text: str) -> RunOptions:
    data = json.loads(text)
    data["runs_dir"] = Path(data["runs_dir"])
    # The nested option groups travel as objects; rebuild each from its own fields.
    for name, group in (("profile", ProfileOptions), ("retention", Retention)):
        if isinstance(data.get(name), dict):
            data[name] = group(**data[name])
    if data.get("listen") is not None:
        data["listen"] = (str(data["listen"][0]), int(data["listen"][1]))
    return RunOptions(**data)


def limit_value(options: RunOptions, name: str) -> Value:
    """The value given for ``name``, else its default in the option table."""
    value = options.limits.get(name, option_table.BY_NAME[name].default)
    assert value is not None, f"{name} has no default"
    return value


def step_cost_bound(options: RunOptions) -> float | None:
    """Seconds a DataLoader's full-size step may take on this CPU before its arithmetic runs
    at a smaller batch; None: the script's own batch sizes throughout (the step_seconds
    limit's rule, which ``Budget.for_options`` applies).

    A debug job (a person steps through the script's own batches), the NaN hunt (whether a
    NaN appears depends on the batch's arithmetic) and ``--no-limits`` keep the script's
    sizes unless ``--step-seconds`` is given; ``--full-batch`` always keeps them. Ranks of
    a distributed job keep them too: their step's collectives cannot run on fake tensors.
    """
    if options.full_batch or options.nproc > 1:
        return None
    if STEP_SECONDS in options.limits:
        return float(options.limits[STEP_SECONDS]) or None
    debugging = options.listen is not None or options.wait_for_client
    if debugging or options.find_nonfinite or options.no_limits:
        return None
    return float(limit_value(options, STEP_SECONDS))
