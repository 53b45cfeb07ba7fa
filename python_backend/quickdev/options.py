"""The options of one quick-dev job, shared by the command line and the in-process API, and
as JSON by the processes that run a part of the job (ranks, spawned workers).

Kept free of torch imports: the command line parses these before torch loads.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from quickdev.rundir.layout import DEFAULT_RUNS_DIR
from quickdev.rundir.retention import RETENTION, Retention

# "auto", "cpu", "cuda" or "cuda:N"; the command line checks the form.
Device = str

DEFAULT_BATCHES = 2
# Budgets every job has unless told otherwise (see ``resolve_budgets``).
DEFAULT_TRAIN_PASSES = 1
DEFAULT_EVAL_FORWARDS = 20
DEFAULT_TIMEOUT_S = 300.0
# A DataLoader's full-size step estimated to take longer than this on the job's CPU computes
# at a smaller batch from the same loader, its full size checked on fake tensors
# (limits/step_cost).
DEFAULT_STEP_SECONDS = 5.0
# The NaN hunt's step budget (--find-nonfinite): a NaN usually appears after tens or
# hundreds of steps, far beyond a quick-dev job's two batches.
DEFAULT_HUNT_STEPS = 500
# What ``--find-nonfinite`` does, for ``quickdev run --help``, beside the budget it quotes.
HUNT_HELP = (
    "run until the first NaN/Inf reaches the loss, a gradient or a parameter (default budget "
    f"{DEFAULT_HUNT_STEPS} steps) and name the operation that made it; under the debugger, "
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
    batches: int = DEFAULT_BATCHES
    max_steps: int | None = None
    # None: the default budget; 0 switches a budget off (see resolve_budgets).
    timeout_s: float | None = None
    train_passes: int | None = None
    loop_steps: int | None = None
    eval_forwards: int | None = None
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
    # --step-seconds: the bound on a full-size step's estimated seconds (see
    # step_cost_bound); None: the default, 0: never smaller. --full-batch: never smaller.
    step_seconds: float | None = None
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


@dataclass(frozen=True)
class Budgets:
    """The budgets one job runs under, defaults applied; None means no bound."""

    max_steps: int | None
    timeout_s: float | None
    train_passes: int | None  # passes over a loader that training steps were taken from
    loop_steps: int | None  # training steps taken from no DataLoader (hand-made batches)
    eval_forwards: int | None  # eval/no-grad forwards in a row that no DataLoader feeds
    # False in the NaN hunt: a pass that takes training steps runs past --batches, so the
    # step budget (not one epoch of two batches) decides how long the hunt trains.
    batches_bound_training: bool = True
    # An evaluation loop without a DataLoader that the job can end also ends once its
    # forwards have run this many seconds, after ``eval_at_least`` of them (None: by count
    # only): full-size evaluation forwards are what a job spends its seconds on.
    eval_seconds: float | None = None
    eval_at_least: int = 1


def resolve_budgets(options: RunOptions) -> Budgets:
    """The one place budget defaults are decided.

    ``--no-limits`` keeps only what was asked for explicitly; a debug job gets no default
    wall clock (a person stepping through code is not a runaway loop). A hand-made batch
    is a batch, so loops without a DataLoader make ``--batches`` steps unless
    ``--max-steps`` asks for more. An evaluation loop without one runs ``--eval-forwards``
    forwards, or, where the job can end it, the step-cost bound's seconds (at least
    ``--batches`` forwards): nanoGPT's evaluation spent most of a job's time on 40
    full-size forwards (docs/step-cost.md). An explicit ``--eval-forwards`` is a count.
    """

    def pick(given: float | None, default: float | None) -> float | None:
        if given is None:
            return None if options.no_limits else default
        return given or None

    debugging = options.listen is not None or options.wait_for_client
    timeout = pick(options.timeout_s, None if debugging else DEFAULT_TIMEOUT_S)
    hunting = options.find_nonfinite
    # The hunt trains for its step budget: epochs are not cut to one pass, and loops
    # without a DataLoader get as many steps.
    max_steps = options.max_steps
    if max_steps is None and hunting:
        max_steps = _whole(pick(None, DEFAULT_HUNT_STEPS))
    loop_default = max_steps or options.batches
    train_passes = pick(options.train_passes, None if hunting else DEFAULT_TRAIN_PASSES)
    return Budgets(
        max_steps=max_steps,
        timeout_s=timeout,
        train_passes=_whole(train_passes),
        loop_steps=_whole(pick(options.loop_steps, loop_default)),
        eval_forwards=_whole(pick(options.eval_forwards, DEFAULT_EVAL_FORWARDS)),
        batches_bound_training=not hunting,
        eval_seconds=None if options.eval_forwards is not None else step_cost_bound(options),
        eval_at_least=options.batches,
    )


def step_cost_bound(options: RunOptions) -> float | None:
    """Seconds a DataLoader's full-size step may take on this CPU before its arithmetic runs
    at a smaller batch; None: the script's own batch sizes throughout.

    A debug job (a person steps through the script's own batches), the NaN hunt (whether a
    NaN appears depends on the batch's arithmetic) and ``--no-limits`` keep the script's
    sizes unless ``--step-seconds`` is given; ``--full-batch`` always keeps them. Ranks of
    a distributed job keep them too: their step's collectives cannot run on fake tensors.
    """
    if options.full_batch or options.nproc > 1:
        return None
    if options.step_seconds is not None:
        return options.step_seconds or None
    debugging = options.listen is not None or options.wait_for_client
    if debugging or options.find_nonfinite or options.no_limits:
        return None
    return DEFAULT_STEP_SECONDS


def _whole(value: float | None) -> int | None:
    return None if value is None else int(value)
