"""What the server's features share: settings, entry scripts, failures and the typed ``State``.

Data only, no features: every feature module imports this one, and this one imports no
feature, so the features never import each other to reach shared state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from quickdev.forecast.devices import DEFAULT_SIZES_GB, DeviceSpecError, parse_devices
from quickdev.rundir import option_table
from quickdev.rundir.layout import DEFAULT_RUNS_DIR
from quickdev.rundir.option_table import BATCHES, STEP_SECONDS
from quickdev.rundir.result import ErrorInfo
from quickdev.rundir.retention import RETENTION
from quickdev.server.documents import DocumentAnalyses
from quickdev.server.protocol import RunError, RunSummary

LENS_KINDS = ("run", "debug", "profile", "nonfinite", "step", "memory")

T = TypeVar("T")


def _setting(
    problem: str, key: str | None = None, valid: Callable[[Any], bool] | None = None
) -> dict[str, Any]:
    """Field metadata for ``settings.parse_settings``: the client's name for the setting when
    it differs, the line a wrong value answers (``{value!r}``), a check beyond its type."""
    return {"key": key, "problem": problem, "valid": valid}


def _limit_setting(name: str) -> Any:
    """The field of a setting that is a limit of the option table (rundir/option_table.py):
    its client name, default, bound and words come from there."""
    limit = option_table.BY_NAME[name]
    assert limit.setting is not None and limit.default is not None
    return field(
        default=limit.default,
        metadata=_setting(
            f"must be {limit.bound()}, got {{value!r}}; using {limit.default:g}",
            key=None if limit.setting == name else limit.setting,
            valid=limit.accepts,
        ),
    )


@dataclass(frozen=True)
class Settings:
    # Interpreter for jobs; None: the server's own.
    python: str | None = field(
        default=None,
        metadata=_setting("must be a path to a Python interpreter; using the server's own"),
    )
    batches: int = _limit_setting(BATCHES)
    # 0: the script's own batch size; else passed to its --batch-size-like option.
    batch_size: int = field(
        default=0,
        metadata=_setting(
            "must be a whole number ≥ 0, got {value!r}; using 0",
            key="batchSize",
            valid=lambda n: n >= 0,
        ),
    )
    # A DataLoader's full-size step estimated above this many seconds computes at a smaller
    # batch (limits/step_cost); 0: never. Debug jobs keep the script's sizes.
    step_seconds: float = _limit_setting(STEP_SECONDS)
    # Relative paths are under each workspace folder.
    runs_dir: str = field(
        default=str(DEFAULT_RUNS_DIR),
        metadata=_setting(
            f"must be a folder path; using {DEFAULT_RUNS_DIR}",
            key="runsDir",
            valid=lambda path: bool(path.strip()),
        ),
    )
    # Jobs run with --keep-outputs: no file journal, their files land in the user's tree.
    keep_outputs: bool = field(
        default=False,
        metadata=_setting("must be true or false; using false", key="keepOutputs"),
    )
    # Run history kept by each job at its start (rundir.retention): by count and by size.
    runs_keep: int = field(
        default=RETENTION.keep_runs,
        metadata=_setting(
            f"must be a whole number ≥ 0, got {{value!r}}; using {RETENTION.keep_runs}",
            key="runsKeep",
            valid=lambda n: n >= 0,
        ),
    )
    runs_max_size_mb: int = field(
        default=RETENTION.max_size_mb,
        metadata=_setting(
            f"must be a whole number ≥ 0, got {{value!r}}; using {RETENTION.max_size_mb}",
            key="runsMaxSizeMb",
            valid=lambda n: n >= 0,
        ),
    )
    # Jobs start from a warm process that has done their imports (server/warm.py).
    warm_start: bool = field(
        default=True,
        metadata=_setting("must be true or false; using true", key="warmStart"),
    )
    # What a memory forecast is compared with where the job's machine has no CUDA device.
    memory_forecast_devices: list[str] = field(
        default_factory=lambda: [str(size) for size in DEFAULT_SIZES_GB],
        metadata=_setting(
            "must be a list of sizes in GB or device names (24, h100), got {value!r}; "
            f"using {', '.join(map(str, DEFAULT_SIZES_GB))}",
            key="memoryForecastDevices",
            valid=lambda devices: bool(devices) and all(_names_devices(d) for d in devices),
        ),
    )
    # Jobs record the tensors each line binds; the editor shows their shapes (shape_hints).
    tensor_shapes: bool = field(
        default=True,
        metadata=_setting("must be true or false; using true", key="tensorShapes"),
    )
    # Each kind apart: a wrong one is ignored, the others kept.
    lenses: dict[str, bool] = field(
        default_factory=lambda: dict.fromkeys(LENS_KINDS, True),
        metadata=_setting(f"must be an object of {', '.join(LENS_KINDS)}: true or false; ignored"),
    )


def _names_devices(text: str) -> bool:
    try:
        parse_devices(text)
    except DeviceSpecError:
        return False
    return True


@dataclass(frozen=True)
class EntryScript:
    path: Path
    kind: str


class Key(Generic[T]):
    """Names one feature's state in ``State``; ``State.get`` returns it with its own type."""

    def __init__(self, name: str, kind: type[T]) -> None:
        self.name = name
        self.kind = kind

    def __repr__(self) -> str:
        return f"Key({self.name!r})"


@dataclass(frozen=True)
class Command:
    """A registered ``quickdev.*`` command: the dataclass its argument is read into and its
    handler, whose return annotation is the answer's type (server/protocol.py)."""

    argument: type[Any]
    handler: Callable[..., Any]


@dataclass
class ForecastHeadlines:
    """Script -> (when its newest run with a memory forecast started, the forecast's one
    line), from the run summaries the server builds."""

    by_script: dict[str, tuple[str, str]] = field(default_factory=dict)

    def note(self, summary: RunSummary) -> bool:
        """Record ``summary``'s forecast if it is the script's newest; True when it was."""
        headline = summary.get("memoryForecast")
        if not headline:
            return False
        script, started = str(summary["script"]), str(summary["started"])
        known = self.by_script.get(script)
        if known is not None and known >= (started, headline):
            return False
        self.by_script[script] = (started, headline)
        return True

    def headline(self, script: Path) -> str | None:
        known = self.by_script.get(str(script))
        return known[1] if known else None


@dataclass
class State:
    settings: Settings = field(default_factory=Settings)
    # The quickdev.* commands by name, as commands.register registered them.
    commands: dict[str, Command] = field(default_factory=dict)
    documents: DocumentAnalyses = field(default_factory=DocumentAnalyses)
    # Entry scripts per workspace folder, from the last scan (for "Debug this step" in files
    # that are not scripts themselves).
    entry_scripts: dict[Path, list[EntryScript]] = field(default_factory=dict)
    # The newest memory forecast of each script, for its code lens.
    forecasts: ForecastHeadlines = field(default_factory=lambda: ForecastHeadlines())
    # Each feature's own state (its jobs, its TensorBoard servers), set by its setup().
    _features: dict[str, Any] = field(default_factory=dict, repr=False)

    def put(self, key: Key[T], value: T) -> None:
        self._features[key.name] = value

    def get(self, key: Key[T]) -> T:
        value = self._features.get(key.name)
        if not isinstance(value, key.kind):
            raise LookupError(f"the server feature {key.name} is not set up")
        return value


@dataclass(frozen=True)
class Failure:
    """Why a run failed, as the user sees it: one message, at a line when one is known."""

    message: str
    file: str | None = None
    line: int | None = None

    @classmethod
    def of_error(cls, error: ErrorInfo) -> Failure:
        # Worded as the terminal words it; the location stays apart for the diagnostic's range.
        return cls(error.headline(), error.file, error.line)

    def to_json(self) -> RunError:
        return {"message": self.message, "file": self.file, "line": self.line}
