"""The ``result.json`` contract (schema 1), shared by the job, the server and the extension.

Plain dataclasses with no torch import, so the language server can read results too.
A contract (docs/architecture.md): add fields, change their names or meanings only on purpose.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from quickdev.rundir import option_table
from quickdev.rundir.file_safety import FileSafety
from quickdev.rundir.jsonio import read_json_object, write_json
from quickdev.rundir.layout import RESULT_FILE
from quickdev.rundir.memory import MemoryForecast
from quickdev.rundir.nonfinite_origin import NonfiniteOrigin, origin_from_dict
from quickdev.rundir.option_table import Value
from quickdev.rundir.step_cost import StepCost

SCHEMA_VERSION = 1
# The feature the NaN hunt's own failures are reported under (a quickdev_error problem).
NAN_HUNT = "the NaN hunt"

# How a job ended; decided with its problems by one rule (rundir/verdict.py). "error":
# Quickdev's own code failed in something the job was asked for; the script's outcome is
# said beside it.
Status = Literal["running", "passed", "failed", "stopped", "killed", "error"]


@dataclass
class Limits:
    # The option table's limits (rundir/option_table.py) the job ran under, by name; None:
    # no bound. result.json has them flat beside the fields below, by their keys there
    # (batches, max_steps, timeout_s, train_passes, loop_steps, eval_forwards,
    # step_seconds: the bound on a full-size step's estimated seconds, ``step_cost``).
    values: dict[str, Value | None] = field(default_factory=option_table.no_bounds)
    device: str = "cpu"
    # The script's own epochs options that the job set to 1 (left at their defaults).
    one_epoch_options: list[str] = field(default_factory=list)
    # A framework's settings the script gave that the job ran with other values of
    # ("Trainer.max_epochs: 10 → 1", "TrainingArguments.report_to: ['wandb'] → 'none'").
    settings_changed: list[str] = field(default_factory=list)
    # --find-nonfinite: the job hunted for the first NaN/Inf (``first_nonfinite``).
    find_nonfinite: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return option_table.by_key(data.pop("values")) | data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Limits:
        known = {f.name for f in fields(cls)} - {"values"}
        return cls(option_table.from_keys(data), **{k: v for k, v in data.items() if k in known})


@dataclass
class DeviceRemaps:
    """Where the script asked its tensors to go, where they went, and how often, by idiom."""

    requested: str = "auto"  # the --device the job was given
    actual: str = "cpu"
    # Idiom ("Tensor.to", "torch.load map_location", "autocast cuda float16 -> cpu bfloat16",
    # ...) -> calls remapped; a count of 0 never appears.
    remaps: dict[str, int] = field(default_factory=dict)
    # Availability queries ("torch.cuda.is_available", "torch.cuda.device_count", ...)
    # the script asked and the CUDA stand-in answered as a CUDA machine would -> times.
    answered: dict[str, int] = field(default_factory=dict)
    # CUDA autocast regions on a CPU: {"asked": "cuda float16", "ran": "float32" (autocast
    # off) | "bfloat16" | "float16", "why": "float32 is fastest on this CPU (bfloat16 0.80×,
    # float16 0.35× its speed)"}, one per dtype asked (limits/device/autocast.py).
    autocast: list[dict[str, str]] = field(default_factory=list)
    cuda_devices: int = 1  # the CUDA devices the script was told it has (one per local rank)
    # The script's checks for more devices ("file:line" -> devices), answered yes.
    needed: dict[str, int] = field(default_factory=dict)
    # Checks for more devices than the stand-in gives (over 8), answered no.
    declined: dict[str, int] = field(default_factory=dict)


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
class Problem:
    """Something that keeps a job from a clean pass although the script may have run to
    its end (see rundir/verdict.py): its kind decides the status, its message is the one
    line the terminal, the result page and the editor show."""

    # nonfinite_loss | no_training | quickdev_error (rundir/verdict.py)
    kind: str
    message: str
    feature: str | None = None  # quickdev_error: what failed ("the profiler", …)
    file: str | None = None  # the user's line it is about, where there is one
    line: int | None = None
    step: int | None = None  # the training step it happened at
    detail: str | None = None  # quickdev_error: the exception, for a bug report


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
class EndedLoop:
    """A loop of the user's that a budget ended at its next iteration; the script went on
    after it (see quickdev/limits/loops)."""

    file: str
    line: int  # the loop statement's first line
    # training: the loop around the step (or one taking a batch of the loader each time
    # round); evaluation: around the forwards; epoch: around a pass over the training
    # loader; enclosing: a loop around one of those (``around``).
    role: str
    budget: str  # the budget that ended it (a stop_reason value: loop_steps, eval_forwards …)
    count: int  # how many of the budget's units had run when it was told to end
    unit: str  # steps | forwards | passes
    times: int = 1  # a loop ended again (an evaluation loop called every epoch)
    around: str | None = None  # an enclosing loop's inner loop, "file:line"
    library: bool = False  # a library's loop the script drives (limits/loops/library.py)


@dataclass
class Phases:
    """What ran of each phase of the script."""

    training_steps: int = 0
    # Eval-mode or no-grad forwards of the model while training went on, then those after
    # the training loops ended (after the last step when none was ended): the test phase.
    evaluation_forwards: int = 0
    test_forwards: int = 0
    files_saved: int = 0  # files the script wrote (created or changed; see ``outputs``)


@dataclass
class ChildProcess:
    """A process the script started for its work (``multiprocessing``), run as a job of its
    own under the same limits; its steps, losses and loaders count in the job's."""

    pid: int
    name: str  # as the script named it: "Process-1", "SpawnProcess-2", "ForkPoolWorker-3"
    status: Status
    run_dir: str  # its own result, relative to the job's run directory
    optimizer_steps: int = 0
    batches: int = 0
    stop_reason: str | None = None
    error: ErrorInfo | None = None


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
    # Steps a GradScaler skipped (inf/NaN gradients while it finds its scale): not in
    # optimizer_steps, as the optimizer did not step.
    scaler_skipped_steps: int = 0
    # Training steps that took no DataLoader batch: hand-made batches, counted as batches.
    loop_batches: int = 0
    losses: list[float] = field(default_factory=list)
    stop_reason: str | None = None
    # The user's loops a budget ended early (the script went on after them), and what ran.
    loops_ended: list[EndedLoop] = field(default_factory=list)
    phases: Phases | None = None
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
    # --memory-forecast: the GPU memory one training step would need (rundir/memory.py).
    memory_forecast: MemoryForecast | None = None
    children: list[ChildProcess] = field(default_factory=list)
    # --find-nonfinite: where the first NaN/Inf came from; None when none was found.
    first_nonfinite: NonfiniteOrigin | None = None
    # What keeps the job from a clean pass (a NaN loss, no training step, an error of
    # Quickdev's own); the status says the first that applies (rundir/verdict.py).
    problems: list[Problem] = field(default_factory=list)
    step_cost: list[StepCost] = field(default_factory=list)  # steps too slow at full size
    # The job's torch (torch.__version__), and one line when it or the Python is outside
    # the releases quickdev is tested with (quickdev/torch_compat.py).
    torch_version: str = ""
    untested_environment: str | None = None
    run_dir: str = ""
    schema: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["limits"] = self.limits.to_dict()
        # Keep "schema" first so a person reading the file sees the version at once.
        return {"schema": data.pop("schema"), **data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobResult:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["limits"] = Limits.from_dict(values.get("limits") or {})
        if values.get("device"):
            values["device"] = DeviceRemaps(**values["device"])
        values["loaders"] = [LoaderStats(**d) for d in values.get("loaders") or []]
        if values.get("error"):
            values["error"] = _error(values["error"])
        if values.get("profile"):
            values["profile"] = ProfileSummary(**values["profile"])
        values["outputs"] = [Output(**d) for d in values.get("outputs") or []]
        values["loops_ended"] = [EndedLoop(**d) for d in values.get("loops_ended") or []]
        if values.get("phases"):
            values["phases"] = Phases(**values["phases"])
        values["children"] = [_child(d) for d in values.get("children") or []]
        if values.get("file_safety"):
            values["file_safety"] = FileSafety.from_dict(values["file_safety"])
        if values.get("memory_forecast"):
            values["memory_forecast"] = MemoryForecast.from_dict(values["memory_forecast"])
        if values.get("first_nonfinite"):
            values["first_nonfinite"] = origin_from_dict(values["first_nonfinite"])
        values["problems"] = [Problem(**d) for d in values.get("problems") or []]
        values["step_cost"] = [StepCost(**d) for d in values.get("step_cost") or []]
        return cls(**values)

    def write(self, run_dir: Path) -> Path:
        """Write atomically, so a reader never sees half a file."""
        return write_json(run_dir / RESULT_FILE, self.to_dict(), indent=2)


def _error(data: dict[str, Any]) -> ErrorInfo:
    err = dict(data)
    err["traceback"] = [Frame(**f) for f in err.get("traceback") or []]
    return ErrorInfo(**err)


def _child(data: dict[str, Any]) -> ChildProcess:
    values = dict(data)
    if values.get("error"):
        values["error"] = _error(values["error"])
    return ChildProcess(**values)


def read_result(run_dir: Path) -> JobResult | None:
    """The run's result, or None when it is missing or unreadable."""
    data = read_json_object(run_dir / RESULT_FILE)
    if data is None:
        return None
    try:
        return JobResult.from_dict(data)
    except (TypeError, ValueError, KeyError, AttributeError):
        return None
