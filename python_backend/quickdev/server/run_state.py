"""A run as the server follows it: its status, its process, and what its job writes while it
runs (``progress.json``, ``debugpy.json``). Data only: no process is started or read here."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from quickdev.rundir.process import ProcessRecord
from quickdev.rundir.result import JobResult
from quickdev.server.job_request import JobRequest
from quickdev.server.protocol import Address
from quickdev.server.types import Failure

RunStatus = Literal[
    "queued", "running", "passed", "failed", "stopped", "killed", "cancelled", "error"
]
FINISHED = frozenset({"passed", "failed", "stopped", "killed", "cancelled", "error"})


class JobProcess(Protocol):
    """What the manager needs of a job's process: a ``Popen``, or a job forked by a warm
    process (server/warm.py). ``pid`` leads the job's process group."""

    pid: int

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...


@dataclass(frozen=True)
class Progress:
    """``progress.json``; a field the job has not written yet keeps its last value."""

    stage: str | None = None
    batches: int | None = None
    steps: int | None = None


@dataclass(frozen=True)
class Listening:
    """``debugpy.json``: where the job's debugpy listens."""

    port: int
    host: str = "127.0.0.1"
    pid: int | None = None

    def to_json(self) -> Address:
        return {"host": self.host or "127.0.0.1", "port": self.port}


@dataclass
class Run:
    run_id: str
    request: JobRequest
    run_dir: Path
    status: RunStatus = "queued"
    started: float = field(default_factory=time.time)
    ended: float | None = None
    stage: str = "starting"
    batches_done: int = 0
    steps: int = 0
    attach: Listening | None = None
    result: JobResult | None = None
    failure: Failure | None = None  # set for a failed run
    process: JobProcess | None = field(default=None, repr=False)
    # The job process as this server started it: tells it from a later one with its PID.
    spawned: ProcessRecord | None = field(default=None, repr=False)
    finished: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    # Set once the attach address is known or the run ended without one.
    attach_settled: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def script(self) -> Path:
        return self.request.script
