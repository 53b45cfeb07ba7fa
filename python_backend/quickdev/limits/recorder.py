"""What the job has seen so far: loaders, steps, losses, outputs.

The limits call into one Recorder; it keeps the numbers for result.json and fires
the EventHub so observers (progress, scalars, profiler) see the same events.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from quickdev.events import EventHub
from quickdev.limits.budget import TRAIN_PASSES, Budget, StopJob
from quickdev.limits.journal.restore import Restored
from quickdev.rundir.result import DeviceRemaps, FileSafety, LoaderStats, Output


def _same_value(a: Any, b: Any) -> bool:
    """``a == b`` for settings, where an object's ``==`` may raise or be ambiguous."""
    try:
        return bool(a == b)
    except Exception:  # an object whose == raises or is ambiguous (a tensor)
        return a is b


def _short(value: Any) -> str:
    try:
        shown = repr(value)
    except Exception:  # the script's own object; naming it must not fail its call
        shown = f"<{type(value).__name__}>"
    return shown if len(shown) <= 40 else shown[:37] + "..."


# A job without limits could back-propagate millions of times; result.json keeps the
# first ones (TensorBoard gets every one).
MAX_RECORDED_LOSSES = 10_000


class Recorder:
    def __init__(self, hub: EventHub, budget: Budget) -> None:
        self.hub = hub
        self.budget = budget
        self.loaders: list[LoaderStats] = []
        self.steps = 0
        self.losses: list[float] = []
        self.outputs: list[Output] = []
        self.problems: list[str] = []  # what the file journal could not put back
        self.notes: list[str] = []  # what the file journal tells the user (one line each)
        self.file_safety: FileSafety | None = None  # the file journal's account
        self._at_end: list[Callable[[], Restored]] = []
        self.one_epoch_options: list[str] = []
        # A framework's settings the script gave and the job replaced ("Trainer.max_epochs:
        # 10 → 1"), for the result's changes.
        self.settings_changed: list[str] = []
        self.optimizer_seen = False
        # Training steps fed by no DataLoader batch: each one counts as a batch too.
        self.loop_steps = 0
        # The device engine's counts, read when the result is written.
        self.device: Callable[[], DeviceRemaps] | None = None
        self._last_step_at = time.perf_counter()
        self._batches_seen = 0  # DataLoader batches of every loader, for "fed by a loader?"
        self._open_passes = 0  # DataLoader passes under way
        # A loader wrapper that reads one batch ahead (accelerate) ends the pass before
        # the step on its last batch: that step still took a DataLoader batch.
        self._pass_ended_since_step = False
        self._batches_at_eval = 0
        self._evals_in_a_row = 0
        self._training_passes: dict[int, int] = {}  # id(LoaderStats) -> passes with steps
        self._passes_beyond_budget = 0  # open passes past the train_passes budget

    def new_loader(self, origin: str) -> LoaderStats:
        stats = LoaderStats(origin=origin)
        self.loaders.append(stats)
        return stats

    def pass_starting(self, stats: LoaderStats) -> tuple[int, bool]:
        """A pass over a loader begins. Returns the step count and whether the pass is
        beyond the train_passes budget, to hand back to ``pass_ended``.

        A pass beyond the budget may still run: a script that measures its training
        accuracy over the training loader after training takes no step there. The job
        stops at the first training forward or step inside such a pass (an endless
        trainer re-iterating its loader)."""
        beyond = self.budget.beyond_train_passes(self._training_passes.get(id(stats), 0))
        stats.passes += 1
        self._open_passes += 1
        self._passes_beyond_budget += beyond
        return self.steps, beyond

    def pass_ended(self, stats: LoaderStats, started: tuple[int, bool]) -> None:
        steps_at_start, beyond = started
        self._open_passes -= 1
        self._passes_beyond_budget -= beyond
        self._pass_ended_since_step = True
        if self.steps > steps_at_start:
            self._training_passes[id(stats)] = self._training_passes.get(id(stats), 0) + 1

    def training_forward(self) -> None:
        """Before a training forward (train mode, grad on) of the top module."""
        if self._passes_beyond_budget:
            raise StopJob(TRAIN_PASSES)

    def batch(self, stats: LoaderStats, wait_s: float) -> None:
        self._batches_seen += 1
        stats.batches += 1
        stats.data_wait_s += wait_s
        self.hub.batch(stats.origin, wait_s)
        self.budget.check_time()

    def in_loop_without_loader(self) -> bool:
        """Whether a step taken now takes its batch from no DataLoader (none is being
        iterated: hand-made batches, or one batch taken once and reused)."""
        return self._open_passes == 0 and not self._pass_ended_since_step

    def train_step(self) -> bool:
        """Count a step; True when it took no DataLoader batch (a loop step)."""
        # Also here: a step whose forward the top-module hook did not see.
        self.training_forward()
        now = time.perf_counter()
        loop_step = self.in_loop_without_loader()
        if loop_step:
            self.loop_steps += 1
        self._pass_ended_since_step = False
        self._evals_in_a_row = 0
        self.steps += 1
        self.hub.train_step(self.steps, now - self._last_step_at)
        self._last_step_at = now
        self.budget.check_time()
        return loop_step

    def eval_forward(self) -> None:
        """Before a forward of the model in eval mode or without grad; stops the job before
        one forward too many of an evaluation loop that no DataLoader bounds."""
        if self._batches_seen != self._batches_at_eval:
            self._batches_at_eval = self._batches_seen
            self._evals_in_a_row = 0
        self.budget.check_eval_forwards(self._evals_in_a_row)
        self._evals_in_a_row += 1

    def loss(self, value: float, step: int) -> None:
        if len(self.losses) < MAX_RECORDED_LOSSES:
            self.losses.append(value)
        self.hub.loss(step, value)

    def settings_overridden(
        self, owner: str, before: Mapping[str, Any], after: Mapping[str, Any]
    ) -> None:
        """The settings of ``before`` (as the script had them) that the job ran with other
        values of, for the result's changes."""
        for name, value in before.items():
            if name in after and _same_value(value, after[name]):
                continue
            new = _short(after[name]) if name in after else "removed"
            self.setting_changed(f"{owner}.{name}: {_short(value)} → {new}")

    def setting_changed(self, line: str) -> None:
        """One line of ``settings_changed`` (each once)."""
        if line not in self.settings_changed:
            self.settings_changed.append(line)

    def redirected(self, requested: str, written: str) -> None:
        if not any(r.requested == requested for r in self.outputs):
            self.outputs.append(Output(requested=requested, written=written))

    def at_end(self, finish: Callable[[], Restored]) -> None:
        """``finish`` puts the user's files back when the job ends (the file journal)."""
        self._at_end.append(finish)

    def end(self) -> None:
        """The user's code is done: restore, and keep what the job wrote. Runs once."""
        while self._at_end:
            restored = self._at_end.pop()()
            self.outputs.extend(restored.outputs)
            self.problems.extend(restored.problems)
            self.notes.extend(restored.notes)
            self.file_safety = restored.safety
