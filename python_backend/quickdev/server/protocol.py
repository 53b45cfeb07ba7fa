"""What the ``quickdev.*`` commands answer and ``quickdev/runChanged`` carries, by the names
docs/protocol.md gives them: the server's one definition of each. mypy holds the handlers
to these types; tests/server/test_protocol_fields.py holds them, and the argument dataclass
each command is registered with (``commands.register``), to the document.

A type with fields that may be absent is split in two: its required fields in a base class,
the rest in the ``total=False`` class named as in the document (NotRequired is Python 3.11+).
"""

from __future__ import annotations

from typing import Any, TypedDict


class _RunError(TypedDict):
    message: str


class RunError(_RunError, total=False):
    file: str | None
    line: int | None


class _Address(TypedDict):
    host: str
    port: int


class Address(_Address, total=False):
    pid: int


class _RunSummary(TypedDict):
    runId: str
    script: str
    args: list[str]
    mode: str
    status: str
    started: str
    runDir: str
    resultFile: str
    outputFile: str
    durationS: float
    batches: int
    losses: list[float | None]  # a NaN or infinite loss is None (JSON has no NaN)
    changes: list[str]
    # Why a finished run is not a clean pass, first (rundir/verdict.py); [] for a clean one.
    verdict: list[str]


class RunSummary(_RunSummary, total=False):
    module: str
    error: RunError
    stage: str
    steps: int
    attach: Address
    memoryForecast: str
    findNonfinite: bool


class _StartJobAnswer(TypedDict):
    runId: str
    runDir: str
    args: list[str]


class StartJobAnswer(_StartJobAnswer, total=False):
    attach: Address


class CancelAnswer(TypedDict):
    cancelled: bool


class RunList(TypedDict):
    runs: list[RunSummary]


class RunDetail(TypedDict):
    run: RunSummary
    # result.json as the job wrote it, whatever its shape; None before the job ends.
    result: Any


class DeleteAnswer(TypedDict):
    deleted: str


class _TensorBoardAnswer(TypedDict):
    url: str
    pid: int


class TensorBoardAnswer(_TensorBoardAnswer, total=False):
    run: str


class SourceAnswer(TypedDict):
    path: str


class AttachAnswer(TypedDict):
    attach: Address


class _ScannedScript(TypedDict):
    path: str
    kind: str


class ScannedScript(_ScannedScript, total=False):
    # A script that runs only as `python -m`: the module, and the folder to run it from.
    module: str
    cwd: str


class _ScannedFolder(TypedDict):
    folder: str
    entryScripts: list[ScannedScript]


class ScannedFolder(_ScannedFolder, total=False):
    error: str


class ScanAnswer(TypedDict):
    folders: list[ScannedFolder]


class ClearShapesAnswer(TypedDict):
    # The files whose tensor-shape hints were forgotten, until the next run.
    cleared: int
