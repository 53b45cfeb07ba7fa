"""The options of one quick-dev job, shared by the command line and the in-process API.

Kept free of torch imports: the command line parses these before torch loads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from quickdev.rundir.layout import DEFAULT_RUNS_DIR

Device = Literal["auto", "cpu"]

DEFAULT_BATCHES = 2


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
    timeout_s: float | None = None
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
    nproc: int = 1  # > 1: local ranks under torch.distributed.run, a result each plus a merged one
    debug_rank: int | None = None  # with nproc > 1: the one rank that runs under debugpy
