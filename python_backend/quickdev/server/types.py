"""What the server's features share: settings, entry scripts, failures and the typed ``State``.

Data only, no features: every feature module imports this one, and this one imports no
feature, so the features never import each other to reach shared state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from quickdev.options import DEFAULT_BATCHES
from quickdev.rundir.layout import DEFAULT_RUNS_DIR
from quickdev.rundir.result import ErrorInfo
from quickdev.server.documents import DocumentAnalyses

LENS_KINDS = ("run", "debug", "profile", "step")

T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    python: str | None = None  # interpreter for jobs; None: the server's own
    batches: int = DEFAULT_BATCHES
    batch_size: int = 0  # 0: the script's own; else passed to its --batch-size-like option
    runs_dir: str = str(DEFAULT_RUNS_DIR)  # relative paths are under each workspace folder
    lenses: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(LENS_KINDS, True))


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


@dataclass
class State:
    settings: Settings = field(default_factory=Settings)
    documents: DocumentAnalyses = field(default_factory=DocumentAnalyses)
    # Entry scripts per workspace folder, from the last scan (for "Debug this step" in files
    # that are not scripts themselves).
    entry_scripts: dict[Path, list[EntryScript]] = field(default_factory=dict)
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
        # The one way the server words a failed run (summary, diagnostic, Runs view).
        return cls(f"{error.type}: {error.message}", error.file, error.line)

    def to_json(self) -> dict[str, Any]:
        return {"message": self.message, "file": self.file, "line": self.line}
