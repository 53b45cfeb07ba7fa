"""The ``result.json`` contract (schema 1), shared by the job, the server and the extension.

Plain dataclasses with no torch import, so the language server can read results too.
A contract (docs/architecture.md): add fields, change their names or meanings only on purpose.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from quickdev.rundir.jsonio import read_json_object, write_json
from quickdev.rundir.layout import RESULT_FILE

SCHEMA_VERSION = 1

Status = Literal["running", "passed", "failed", "stopped", "killed"]


@dataclass
class Limits:
    batches: int | None = 2
    max_steps: int | None = None
    timeout_s: float | None = None
    device: str = "cpu"
    # The script's own epochs options that the job set to 1 (left at their defaults).
    one_epoch_options: list[str] = field(default_factory=list)
    # A framework's settings the script gave that the job ran with other values of
    # ("Trainer.max_epochs: 10 → 1", "TrainingArguments.report_to: ['wandb'] → 'none'").
    settings_changed: list[str] = field(default_factory=list)
    # Passes over a loader that trained; steps from no DataLoader; eval forwards in a row
    # that no DataLoader feeds (see limits/budget.py). None: no bound.
    train_passes: int | None = None
    loop_steps: int | None = None
    eval_forwards: int | None = None


@dataclass
class DeviceRemaps:
    """Where the script asked its tensors to go, where they went, and how often, by idiom."""

    requested: str = "auto"  # the --device the job was given
    actual: str = "cpu"
    # Idiom ("Tensor.to", "torch.load map_location", "autocast cuda float16 -> cpu bfloat16",
    # ...) -> calls remapped; a count of 0 never appears.
    remaps: dict[str, int] = field(default_factory=dict)
    # CUDA autocast regions on a CPU: {"asked": "cuda float16", "ran": "float32" (autocast
    # off) | "bfloat16" | "float16", "why": "float32 is fastest on this CPU (GFLOP/s: …)"},
    # one per dtype asked (limits/device/autocast.py).
    autocast: list[dict[str, str]] = field(default_factory=list)


@dataclass
class LoaderStats:
    origin: str  # "file:line" where the DataLoader was created
    passes: int = 0
    batches: int = 0
    data_wait_s: float = 0.0
    batch_signature: str = ""
    nonfinite: bool = False


@dataclass
class Frame:
    file: str
    line: int
    function: str


@dataclass
class ErrorInfo:
    type: str
    message: str
    file: str | None = None  # innermost frame in the user's files
    line: int | None = None
    traceback: list[Frame] = field(default_factory=list)

    def headline(self, *, one_line: bool = False) -> str:
        """``Type: message``: the one wording of an error, in the terminal and the editor.

        ``one_line``: the message's first line and where it happened, for the terminal's
        summary; the editor shows the whole message at its line.
        """
        message = self.message.strip()
        if not one_line:
            return f"{self.type}: {message}"
        first = message.splitlines()[0] if message else ""
        where = f" at {self.file}:{self.line}" if self.file else ""
        return f"{self.type}: {first}{where}"


@dataclass
class ProfileSummary:
    trace_files: list[str] = field(default_factory=list)
    top_ops: list[dict[str, Any]] = field(default_factory=list)
    data_wait_share: float = 0.0
    advice: str | None = None
    py_profile: str | None = None


@dataclass
class Output:
    """A file the job wrote outside its run directory, and where its version is kept."""

    requested: str  # the absolute path the script wrote, removed or created
    written: str | None  # its version in the run directory; None when the job deleted it
    # created | changed | deleted: the user's file is back as it was (the file journal);
    # appended: back at its original length, ``written`` holds the bytes the job appended;
    # redirected: written to ``written`` in the first place (Lightning's directories);
    change: str = "redirected"


@dataclass
class YourEdit:
    """A file the person saved (or made again) while the job ran, after the job's change."""

    path: str  # left as the person saved it
    original: str | None  # the version from before the job, in the run directory; None: gone


@dataclass
class UnseenChange:
    """A change no journal saw (a program that is not Python, a library not in the
    registry, an edit of the person's): named, since it could not be put back."""

    path: str
    change: str  # changed | created | deleted
    why: str


@dataclass
class FileSafety:
    """How the job kept the user's files, and what it could not keep."""

    # journal: originals put aside before each change and put back at the end (the one
    # method for now; ``why`` says why not a copy-on-write view of the folder).
    method: str = "journal"
    why: str = ""
    # The manifest of the working folder taken at start, to find changes no journal saw.
    checked_files: int = 0
    check_bound: int = 0  # files beyond it are not checked (``complete`` false)
    complete: bool = True
    your_edits: list[YourEdit] = field(default_factory=list)
    not_restored: list[UnseenChange] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileSafety:
        values = dict(data)
        values["your_edits"] = [YourEdit(**d) for d in values.get("your_edits") or []]
        values["not_restored"] = [UnseenChange(**d) for d in values.get("not_restored") or []]
        return cls(**values)


@dataclass
class JobResult:
    id: str
    status: Status = "running"
    script: str = ""
    argv: list[str] = field(default_factory=list)
    cwd: str = ""
    started: str = ""
    duration_s: float = 0.0
    limits: Limits = field(default_factory=Limits)
    loaders: list[LoaderStats] = field(default_factory=list)
    optimizer_steps: int = 0
    # Training steps that took no DataLoader batch: hand-made batches, counted as batches.
    loop_batches: int = 0
    losses: list[float] = field(default_factory=list)
    stop_reason: str | None = None
    # One line: the script's own knob that would have ended the run sooner than a budget.
    stop_advice: str | None = None
    error: ErrorInfo | None = None
    profile: ProfileSummary | None = None
    outputs: list[Output] = field(default_factory=list)
    # --keep-outputs (setting quickdev.keepOutputs): the job's files stay where it wrote
    # them and the user's tree is not restored.
    keep_outputs: bool = False
    file_safety: FileSafety | None = None  # None with --keep-outputs
    peak_rss_mb: float = 0.0
    # A debug run: seconds the debugger held the script stopped, left out of duration_s.
    paused_s: float = 0.0
    device: DeviceRemaps | None = None
    exit_code: int | None = None  # the script's own sys.exit code, when it called it
    run_dir: str = ""
    schema: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        # Keep "schema" first so a person reading the file sees the version at once.
        return {"schema": data.pop("schema"), **data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobResult:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["limits"] = Limits(**values.get("limits") or {})
        if values.get("device"):
            values["device"] = DeviceRemaps(**values["device"])
        values["loaders"] = [LoaderStats(**d) for d in values.get("loaders") or []]
        if values.get("error"):
            err = dict(values["error"])
            err["traceback"] = [Frame(**f) for f in err.get("traceback") or []]
            values["error"] = ErrorInfo(**err)
        if values.get("profile"):
            values["profile"] = ProfileSummary(**values["profile"])
        values["outputs"] = [Output(**d) for d in values.get("outputs") or []]
        if values.get("file_safety"):
            values["file_safety"] = FileSafety.from_dict(values["file_safety"])
        return cls(**values)

    def write(self, run_dir: Path) -> Path:
        """Write atomically, so a reader never sees half a file."""
        return write_json(run_dir / RESULT_FILE, self.to_dict(), indent=2)


def read_result(run_dir: Path) -> JobResult | None:
    """The run's result, or None when it is missing or unreadable."""
    data = read_json_object(run_dir / RESULT_FILE)
    if data is None:
        return None
    try:
        return JobResult.from_dict(data)
    except (TypeError, ValueError, KeyError, AttributeError):
        return None
