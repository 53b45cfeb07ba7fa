"""What static analysis finds in one Python source, in 0-based line numbers (as LSP counts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

EntryKind = Literal["main_guard", "trainer_fit", "main_call", "top_level_loop"]
StepKind = Literal["framework_step", "loop_step", "train_loop", "forward", "getitem"]
# The kinds that are a training step: the others (a model's forward, a dataset's item) are
# calls worth stopping in, but not "the step".
TRAINING_STEP_KINDS: frozenset[StepKind] = frozenset({"framework_step", "loop_step", "train_loop"})
KnobKind = Literal["epochs", "steps", "eval_iters", "workers", "batch_size", "dry_run"]


@dataclass(frozen=True)
class EntryPoint:
    """Where a script starts doing work when run as ``__main__``."""

    kind: EntryKind
    line: int


@dataclass(frozen=True)
class Step:
    """Code worth stopping in: a training/validation step, a function or top-level loop
    that trains (calls ``backward`` or steps an optimizer in a loop), ``forward``,
    ``__getitem__``."""

    kind: StepKind
    qualname: str  # "LitModel.training_step", "train_step", "train"; "training loop" at top level
    line: int  # the ``def`` line (a top-level loop's own line), where the lens goes
    # Where a breakpoint stops on each step: the first statement of the loop body that trains,
    # else of the function (after its docstring).
    body_line: int


@dataclass(frozen=True)
class Knob:
    """An argparse option, or a module-level constant, that makes a run shorter when
    given a small value."""

    kind: KnobKind
    flag: str  # the option as the script declares it ("--num-epochs"), or the global's name
    line: int
    is_switch: bool  # store_true: passing the flag alone turns it on
    default: int | None  # the declared default when it is a whole number
    is_global: bool = False  # `eval_iters = 200` at module level, not a command-line option


@dataclass(frozen=True)
class Analysis:
    entry_points: tuple[EntryPoint, ...] = ()
    steps: tuple[Step, ...] = ()
    knobs: tuple[Knob, ...] = ()
    # How the scan labels a script whose framework's trainer runs it ("lightning").
    framework_label: str | None = None
    # False when the newest text did not parse; the rest is then the last good result.
    parsed: bool = True
    syntax_error: str | None = field(default=None, compare=False)

    @property
    def main_entry(self) -> EntryPoint | None:
        """The one place a file's run/debug/profile lenses go: the main guard if there is one;
        a script that works at module level runs from its top (line 0)."""
        guards = [e for e in self.entry_points if e.kind == "main_guard"]
        candidates = guards or list(self.entry_points)
        return min(candidates, key=lambda e: e.line) if candidates else None

    @property
    def script_kind(self) -> str | None:
        """How the workspace scan labels the file: its framework's label (``lightning``) or
        the main entry's kind."""
        entry = self.main_entry
        if entry is None:
            return None
        return self.framework_label or entry.kind
