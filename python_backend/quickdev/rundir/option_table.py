"""The option table: every limit a quick-dev job runs under, declared once.

A row says everything the rest of Quickdev derives from it:

- the command line: ``quickdev run``'s flag, its type and bound, its help (``cli.py``);
- the job: the value given (``RunOptions.limits``, by ``name``), its default, the budget
  that enforces it (``limits/budget.py``) and the ``stop_reason`` it gives (its ``name``);
- the result: ``result.json``'s ``limits`` (by ``key``), the stop line and the advice
  (``rundir/changes.py``, ``job/advice.py``: what it ``counts`` and the script's own
  ``knobs`` that bound the same loop);
- the editor: the setting ``quickdev.<setting>`` and the launch attribute ``launch``, also
  the ``quickdev.startJob`` argument: the server's ``Settings`` and ``StartJob``, and the
  generated package.json entries, TypeScript types and docs tables
  (``tools/option_table.py`` writes them; ``tests/test_option_table.py`` fails when one is
  stale).

Standard library only, and nothing else of quickdev: the job, the server and the result's
wording all read it, as ``option_table.LIMITS`` when they use it (so a row added in a test
reaches them all).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

# "count": a whole number; "seconds": a number of seconds.
Kind = Literal["count", "seconds"]
Value = int | float


@dataclass(frozen=True)
class Limit:
    """One limit. A budget (``stops``) gives its ``name`` as the stop reason when it ends
    the user's loops or the job; ``batches`` bounds each pass and ends nothing itself."""

    name: str
    flag: str
    kind: Kind
    # The smallest whole number it takes, or the number of seconds it must exceed; with
    # ``off``, 0 is accepted too and switches it off.
    minimum: Value
    default: Value | None  # None: no bound unless given
    help: str  # the command line's help; the default follows it
    doc: str  # what it bounds, for the docs tables (the options table, protocol.md)
    counts: str = ""  # what its value counts, in the stop line: "2 steps without a DataLoader"
    stops: bool = True
    off: bool = False  # 0 switches it off
    off_words: str = "no bound"  # what 0 means, in words
    # The values it takes, in words, where its kind's own ("seconds > 0") do not say it.
    bound_words: str | None = None
    # The default in words where a rule beside the number decides it (``Budget.for_options``);
    # `backticks` mark option names for the docs.
    default_doc: str | None = None
    # The script's own options that bound the same loop (``analysis``'s knob kinds), in the
    # order the advice prefers them.
    knobs: tuple[str, ...] = ()
    setting: str | None = None  # quickdev.<setting>: the editor's value for every job
    launch: str | None = None  # the launch attribute, also the quickdev.startJob argument
    key: str | None = None  # its key in result.json's ``limits``, where not ``name``
    metavar: str | None = None
    # False: the editor's setting is not passed to a debug job (a person steps through the
    # script as it is).
    debug_setting: bool = True

    @property
    def result_key(self) -> str:
        return self.key or self.name

    def default_words(self, *, markdown: bool = False) -> str:
        words = self.default_doc
        if words is None:
            words = "none" if self.default is None else f"{self.default:g}"
        return words if markdown else words.replace("`", "")

    def accepts(self, value: object) -> bool:
        """Whether ``value`` is a number of this kind within the bound."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.off and value == 0:
            return True
        if self.kind == "count":
            return isinstance(value, int) and value >= self.minimum
        return value > self.minimum

    def bound(self) -> str:
        """The values it takes, in words: "a whole number of at least 1", "seconds > 0 (0: no
        bound)"."""
        if self.bound_words is not None:
            text = self.bound_words
        elif self.kind == "count":
            text = f"a whole number of at least {self.minimum:g}"
        else:
            text = f"seconds > {self.minimum:g}"
        return f"{text} (0: {self.off_words})" if self.off else text

    def problem(self, name: str) -> str:
        """The one line a wrong value of ``name`` answers; ``{value!r}`` is the value."""
        return f'"{name}" must be {self.bound()}, got {{value!r}}'

    def parse(self, text: str) -> Value:
        """A value from the command line, or ``argparse.ArgumentTypeError`` in one line."""
        try:
            value: Value = int(text) if self.kind == "count" else float(text)
        except ValueError:
            expected = "a whole number" if self.kind == "count" else "seconds"
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not self.accepts(value):
            raise argparse.ArgumentTypeError(f"expected {self.bound()}, got {text}")
        return value

    def command_help(self) -> str:
        off = f"; 0: {self.off_words}" if self.off else ""
        return f"{self.help} (default {self.default_words()}{off})"


# The NaN hunt's step budget (--find-nonfinite): a NaN usually appears after tens or
# hundreds of steps, far beyond a quick-dev job's two batches.
HUNT_STEPS = 500

DEFAULT_BATCHES = 2

BATCHES = "batches"
MAX_STEPS = "max_steps"
TIMEOUT = "timeout"
TRAIN_PASSES = "train_passes"
LOOP_STEPS = "loop_steps"
EVAL_FORWARDS = "eval_forwards"
STEP_SECONDS = "step_seconds"

# In the order ``quickdev run --help`` lists them.
LIMITS: tuple[Limit, ...] = (
    Limit(
        BATCHES,
        "--batches",
        "count",
        minimum=1,
        default=DEFAULT_BATCHES,
        stops=False,
        help="batches per DataLoader pass",
        doc="batches per DataLoader pass",
        setting="batches",
        launch="batches",
    ),
    Limit(
        MAX_STEPS,
        "--max-steps",
        "count",
        minimum=1,
        default=None,
        default_doc=f"none; {HUNT_STEPS} with `--find-nonfinite`",
        help="stop after this many training steps",
        doc="optimizer steps of the whole job (see below for closures): the loop taking them "
        "and every loop around it end (gracefully, as Lightning's `max_steps`)",
        counts="steps",
        knobs=("steps",),
        launch="maxSteps",
        metavar="N",
    ),
    Limit(
        TIMEOUT,
        "--timeout",
        "seconds",
        minimum=0,
        off=True,
        default=300.0,
        default_doc="300, none when debugging",
        help="stop after this many seconds of wall-clock time",
        doc="wall clock: stops the script (not the job's finishing after it: the restore of "
        "your files, the memory forecast); none for a debug job (`--listen`), and lifted when "
        "a debugger attaches (`quickdev attach`)",
        counts="seconds",
        knobs=("steps", "epochs", "eval_iters"),
        launch="timeout",
        key="timeout_s",
        metavar="SECONDS",
    ),
    Limit(
        TRAIN_PASSES,
        "--train-passes",
        "count",
        minimum=1,
        off=True,
        default=1,
        default_doc="1; none with `--find-nonfinite`",
        help="passes over a loader that training steps come from",
        doc="passes over a loader that training steps come from: once a pass that trained "
        "ends, the loops around it (the epoch loop) end before the next pass. Reading the "
        "training loader again without training (train accuracy under `no_grad`) is allowed; "
        "an explicit `--epochs N` of the script gives N",
        counts="pass(es) over the training loader",
        knobs=("epochs", "steps"),
        metavar="N",
    ),
    Limit(
        LOOP_STEPS,
        "--loop-steps",
        "count",
        minimum=1,
        off=True,
        default=None,
        default_doc="`--max-steps`, else `--batches`",
        help="training steps that take no DataLoader batch",
        doc="training steps that take no DataLoader batch, per run of the loop that takes them "
        "(`while iter < max_iters` over hand-made batches); its epoch loop ends after "
        "`--train-passes` runs",
        counts="steps without a DataLoader",
        knobs=("steps",),
        metavar="N",
    ),
    Limit(
        EVAL_FORWARDS,
        "--eval-forwards",
        "count",
        minimum=1,
        off=True,
        default=20,
        help="eval-mode/no-grad forwards in a row that no DataLoader feeds",
        doc="eval-mode or no-grad forwards of the model in a row that no DataLoader feeds: the "
        "evaluation loop (`estimate_loss()`) ends and the script goes on with what it computed; "
        "one that can be ended also ends once it has run `--step-seconds` (and at least "
        "`--batches` forwards) ([why](step-cost.md#evaluation-loops-without-a-dataloader))",
        counts="evaluation forwards in a row without a DataLoader",
        knobs=("eval_iters",),
        metavar="N",
    ),
    Limit(
        STEP_SECONDS,
        "--step-seconds",
        "seconds",
        minimum=0,
        off=True,
        off_words="never",
        bound_words="seconds ≥ 0",
        default=5.0,
        default_doc="5, none when debugging",
        stops=False,
        help="a DataLoader's full-size step estimated above this on this CPU computes at a "
        "smaller batch from the same loader, its full size checked on fake tensors",
        doc="seconds a DataLoader's full-size step may take on this CPU: one estimated above "
        "it computes at a smaller batch from the same loader, its full size checked on fake "
        "tensors, said first; the script's own sizes for a debug job, the NaN hunt, "
        "`--no-limits` (unless given), `--nproc` and `--full-batch` ([step cost](step-cost.md))",
        setting="stepSeconds",
        metavar="SECONDS",
        debug_setting=False,
    ),
)

BY_NAME: dict[str, Limit] = {limit.name: limit for limit in LIMITS}


def no_bounds() -> dict[str, Value | None]:
    """Every limit, by name, bounding nothing."""
    return dict.fromkeys((limit.name for limit in LIMITS), None)


def by_key(values: Mapping[str, Value | None]) -> dict[str, Value | None]:
    """Limits by name as result.json's ``limits`` has them: by their keys there."""
    return {BY_NAME[name].result_key: value for name, value in values.items()}


def from_keys(data: Mapping[str, Any]) -> dict[str, Value | None]:
    """The limits of result.json's ``limits``, by name; one missing bounds nothing."""
    found = {limit.name: data[limit.result_key] for limit in LIMITS if limit.result_key in data}
    return no_bounds() | found
