"""The tensors a job saw on each line of the user's code (``SHAPES_FILE``), and how a tensor
reads: ``f32[64, 6, 256, 64]``.

The job records them (``quickdev.limits.shapes``); the language server turns them into inlay
hints and hovers; the debugger's Variables view (``quickdev.job.tensor_view``) writes a live
tensor with the same ``tensor_text``. Standard library only.

A file's ``lines`` are the hashes of its lines as the job compiled it
(``quickdev.analysis.source.line_hashes``): the editor keeps a hint where its lines' text
still matches, wherever they moved.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from quickdev.rundir.jsonio import read_json_object, write_json
from quickdev.rundir.layout import SHAPES_FILE

SCHEMA = 1

# The phases a value is seen in (``Seen.phases``):
SETUP = "setup"  # before the first forward of the model
TRAIN = "train"  # in a training forward (train mode, grad on) and what follows it
EVAL = "eval"  # in an evaluation forward (eval mode or no grad) and what follows it


@dataclass
class TensorFacts:
    dtype: str  # torch's name without "torch.": float32, bfloat16, int64
    shape: list[int]
    device: str  # cpu, cuda:0, meta
    requires_grad: bool = False
    layout: str = "strided"  # sparse_coo, … (no statistics then)
    # Statistics of the values, where they could be read (None: not computed: too large, not
    # a number type, a meta or traced tensor). min/max/mean are over the finite values.
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    nan: int | None = None
    inf: int | None = None


@dataclass
class Structure:
    """A tuple, list or dict holding tensors, as far as it was looked into."""

    kind: str  # tuple | list | dict
    items: list[Value]
    keys: list[str] | None = None  # a dict's keys, as text
    more: int = 0  # items left out


@dataclass
class Other:
    """A value inside a structure that is not a tensor: its type's name."""

    type: str


Value = TensorFacts | Structure | Other


@dataclass
class Cut:
    """A loop that a budget ended (or a pass over a DataLoader it cut short) while the
    value was being made: a full run may give another shape."""

    file: str
    line: int  # the loop statement's first line
    budget: str  # what ended it: a stop_reason value (eval_forwards, max_steps …) or "batches"
    count: int  # how many of the budget's units had run
    unit: str  # forwards | steps | passes | batches


@dataclass
class Seen:
    """One distinct value of a name, and the phases it was seen in."""

    value: Value
    phases: list[str]
    cut: Cut | None = None  # the first time it was seen, a budget had cut what made it


# Why a name's record may hold fewer distinct values than the run bound (``partial``):
LOOP_WENT_ON = "loop"  # a for loop went on past the items looked at (LOOP_ITEMS_LOOKED)
LOOKS_STOPPED = "stopped"  # the line was no longer looked at when a later look found new
# A for loop's items looked at each time the loop starts, while its line is recorded.
LOOP_ITEMS_LOOKED = 64
# Distinct values beyond those kept are counted up to this many (``more``: at least).
MORE_COUNTED = 1000


@dataclass
class NameRecord:
    name: str
    seen: list[Seen]
    times: int = 1  # how many times the name was observed on this line
    # Distinct values seen beyond those kept, counted up to MORE_COUNTED.
    more: int = 0
    partial: str | None = None  # LOOP_WENT_ON | LOOKS_STOPPED: the run may have bound others


@dataclass
class Binding:
    """The names one statement bound: an assignment, a ``for`` target, a function's
    parameters. Lines are 1-based, as Python counts; ``col`` is the character where the
    hint goes on ``line`` (the statement's end, or after a header's colon)."""

    first_line: int
    line: int
    col: int
    kind: str  # assign | for | with | parameters
    names: list[NameRecord]


@dataclass
class FileRecord:
    path: str
    lines: list[int]
    bindings: list[Binding]


@dataclass
class ShapesRecord:
    run_id: str
    started: str  # ISO-8601, the job's start
    files: list[FileRecord] = field(default_factory=list)
    schema: int = SCHEMA

    def write(self, run_dir: Path) -> Path:
        return write_json(run_dir / SHAPES_FILE, asdict(self))


def read_shapes(run_dir: Path) -> ShapesRecord | None:
    """The run's record; None when it has none or it is not one this version reads."""
    data = read_json_object(run_dir / SHAPES_FILE)
    if data is None or data.get("schema") != SCHEMA:
        return None
    try:
        return ShapesRecord(
            run_id=str(data["run_id"]),
            started=str(data["started"]),
            files=[_file(f) for f in data["files"]],
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _file(data: dict[str, Any]) -> FileRecord:
    bindings = [
        Binding(
            first_line=int(b["first_line"]),
            line=int(b["line"]),
            col=int(b["col"]),
            kind=str(b["kind"]),
            names=[_name(n) for n in b["names"]],
        )
        for b in data["bindings"]
    ]
    return FileRecord(str(data["path"]), [int(h) for h in data["lines"]], bindings)


def _name(data: dict[str, Any]) -> NameRecord:
    seen = [
        Seen(_value(s["value"]), [str(p) for p in s["phases"]], _cut(s.get("cut")))
        for s in data["seen"]
    ]
    partial = data.get("partial")
    return NameRecord(
        str(data["name"]),
        seen,
        int(data["times"]),
        int(data["more"]),
        str(partial) if partial is not None else None,
    )


def _cut(data: dict[str, Any] | None) -> Cut | None:
    if data is None:
        return None
    return Cut(
        str(data["file"]),
        int(data["line"]),
        str(data["budget"]),
        int(data["count"]),
        str(data["unit"]),
    )


def _value(data: dict[str, Any]) -> Value:
    if "dtype" in data:
        return TensorFacts(**data)
    if "kind" in data:
        items = [_value(i) for i in data["items"]]
        return Structure(data["kind"], items, data.get("keys"), int(data.get("more", 0)))
    return Other(str(data["type"]))


# --- how a tensor reads -------------------------------------------------------------------

_DTYPE_WORDS = (("bfloat", "bf"), ("float", "f"), ("uint", "u"), ("int", "i"), ("complex", "c"))
_MAX_TEXT = 200  # a structure's text beyond this is cut: a hint is one short line


def short_dtype(dtype: str) -> str:
    """``float32`` → ``f32``, ``bfloat16`` → ``bf16``, ``int64`` → ``i64``; ``bool`` stays."""
    for word, short in _DTYPE_WORDS:
        if re.match(word + r"\d", dtype):
            return short + dtype[len(word) :]
    return dtype


def shape_text(value: Value) -> str:
    """``f32[64, 6, 256, 64]``; a structure as Python writes it: ``(f32[8, 10], i64[8])``."""
    text = _shape_text(value)
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


def _shape_text(value: Value) -> str:
    if isinstance(value, TensorFacts):
        return f"{short_dtype(value.dtype)}[{', '.join(str(d) for d in value.shape)}]"
    if isinstance(value, Other):
        return value.type
    parts = [_shape_text(item) for item in value.items]
    if value.kind == "dict":
        parts = [f"{key}: {part}" for key, part in zip(value.keys or [], parts, strict=False)]
    if value.more:
        parts.append("…")
    if value.kind == "tuple" and len(parts) == 1:
        parts[0] += ","
    brackets = {"tuple": "()", "list": "[]", "dict": "{}"}.get(value.kind, "()")
    return brackets[0] + ", ".join(parts) + brackets[1]


def tensor_text(facts: TensorFacts) -> str:
    """The shape, then what else a glance needs: ``f32[8, 3, 32, 32] cpu grad NaN``. The
    Variables view shows this; the hover starts with it."""
    text = f"{shape_text(facts)} {facts.device}"
    if facts.requires_grad:
        text += " grad"
    if facts.layout != "strided":
        text += f" {facts.layout}"
    if facts.nan:
        text += " NaN"
    if facts.inf:
        text += " Inf"
    return text
