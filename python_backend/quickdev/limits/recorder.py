"""What the job has seen so far: loaders, steps, losses, outputs.

The limits call into one Recorder; it keeps the numbers for result.json and tells the
EventHub, so observers (progress, scalars, profiler) see the same events, and the budget
(``limits/budget.py``), which decides whether a loop or the job ends there.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any, Protocol

from quickdev import problems
from quickdev.events import EventHub, JobObserver
from quickdev.limits.budget import Budget
from quickdev.limits.journal.restore import Restored
from quickdev.limits.loops.marks import Place
from quickdev.limits.user_code import caller_origin, is_user_file
from quickdev.rundir.file_safety import FileSafety
from quickdev.rundir.nonfinite_origin import NonfiniteOrigin
from quickdev.rundir.result import DeviceRemaps, LoaderStats, Output, Phases, Problem
from quickdev.rundir.shapes import EVAL, SETUP, TRAIN, Cut
from quickdev.rundir.step_cost import StepCost
from quickdev.rundir.verdict import NONFINITE_LOSS


class ShapeWatch(Protocol):
    """What the limits tell the tensor-shape recording (limits/shapes/observe.py)."""

    def phase_started(self, phase: str) -> None: ...
    def forward_starting(self, args: Any) -> None: ...
    def budget_cut(self, frame: FrameType, loop_line: int, cut: Cut) -> None: ...


class NonfiniteWatch(JobObserver, Protocol):
    """What the limits tell the NaN hunt (limits/nonfinite/hunt.py); it observes the job's
    events too."""

    fetching: bool  # a DataLoader is fetching a batch

    def watch_loader(self, iterator: Iterator[Any]) -> None: ...
    def batch_taken(self, loader: LoaderStats, batch: Any) -> None: ...
    def before_backward(self, loss: Any) -> None: ...


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


@dataclass(frozen=True)
class PassStart:
    """What ``Recorder.pass_ended`` needs of the pass's start."""

    steps: int
    training_forwards: int  # the recorder's count when it started
    beyond: bool  # beyond the train_passes budget when it started
    where: tuple[Place, ...]  # the user's loops around where it started


class Recorder:
    def __init__(self, hub: EventHub, budget: Budget, shapes: ShapeWatch | None = None) -> None:
        self.hub = hub
        self.budget = budget
        # Told when the model's forwards switch between training and evaluation, of each
        # forward's inputs and of the loops a budget cuts short (the tensor-shape
        # recording looks at lines again, and marks what a budget cut).
        self.shapes = shapes
        self._phase = SETUP
        # The loops a budget ends are marked as cut short in the tensor shapes.
        budget.loops.on_end = shapes.budget_cut if shapes is not None else None
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
        # GradScaler.step calls that skipped the optimizer (inf/NaN gradients while the
        # scaler finds its scale, as fp16 runs do at their start): steps the script took.
        self.scaler_skipped_steps = 0
        # A closure optimizer's pass was counted (closure_steps) and its step() goes on:
        # what it does next (the update) belongs to the step already counted.
        self.closure_pass_counted = False
        # While the job itself runs the model (the memory forecast's replay), its steps
        # and forwards are not the script's: nothing is counted or budgeted.
        self.paused = False
        # Training steps fed by no DataLoader batch: each one counts as a batch too.
        self.loop_steps = 0
        # The device engine's counts, read when the result is written.
        self.device: Callable[[], DeviceRemaps] | None = None
        self._last_step_at = time.perf_counter()
        self._open_passes = 0  # DataLoader passes under way
        # A loader wrapper that reads one batch ahead (accelerate) ends the pass before
        # the step on its last batch: that step still took a DataLoader batch.
        self._pass_ended_since_step = False
        self.eval_forwards = 0
        self._evals_since_step = 0
        self._training_passes: dict[int, int] = {}  # id(LoaderStats) -> passes with steps
        # A pass that ended before any step: a read-ahead loader's (accelerate) whose step
        # comes right after, with gradient accumulation over the whole pass.
        self._ended_before_its_step: tuple[LoaderStats, PassStart] | None = None
        self._training_forwards = 0
        # --find-nonfinite: the hunt, and what it found.
        self.nonfinite: NonfiniteWatch | None = None
        self.first_nonfinite: NonfiniteOrigin | None = None
        self._nonfinite_loss_said = False
        # Where the script built its first optimizer ("file:line"): a script that has
        # one and ends without a step trained nothing (rundir/verdict.py).
        self.optimizer_origin: str | None = None
        # Steps too slow for this CPU at full size, and what was done (limits/step_cost).
        self.step_costs: list[StepCost] = []
        # Called as each of the script's backward() calls returns (the step-cost
        # calibration times the first step to there): the job's one wrapper of backward.
        self.on_backward_end: list[Callable[[], None]] = []

    @contextmanager
    def pause(self) -> Iterator[None]:
        self.paused = True
        try:
            yield
        finally:
            self.paused = False

    def restart(self, hub: EventHub) -> None:
        """In a child process forked from the job: count this process's work afresh, told
        to ``hub``. Loaders made before the fork stay known (the child may iterate them),
        with their counts zeroed; the parent's numbers are the parent's. What the limits
        wired in stays: the device engine, who hears of phase switches, the NaN hunt
        (which now hears this process's steps); what the hunt finds here is this
        process's (``first_nonfinite`` starts empty), and so are its problems."""
        loaders, device, shapes, hunt = self.loaders, self.device, self.shapes, self.nonfinite
        problems.take()  # the parent's, copied by the fork
        Recorder.__init__(self, hub, self.budget, shapes)
        self.budget.restart()
        self.device = device
        self.nonfinite = hunt
        if hunt is not None:
            hub.add(hunt)
        for stats in loaders:
            fresh = LoaderStats(origin=stats.origin)
            for name, value in vars(fresh).items():
                setattr(stats, name, value)
        self.loaders = loaders

    def new_loader(self, origin: str) -> LoaderStats:
        stats = LoaderStats(origin=origin)
        self.loaders.append(stats)
        return stats

    def pass_starting(self, stats: LoaderStats) -> PassStart:
        """A pass over a loader begins. Returns what ``pass_ended`` needs: the step count,
        and what the budget said of the pass (``Budget.pass_starting``)."""
        self._ended_before_its_step = None  # a new pass came first: that one did not train
        beyond, where = self.budget.pass_starting(self._training_passes.get(id(stats), 0))
        stats.passes += 1
        self._open_passes += 1
        return PassStart(self.steps, self._training_forwards, beyond, where)

    def pass_ended(self, stats: LoaderStats, started: PassStart) -> None:
        self._open_passes -= 1
        self._pass_ended_since_step = True
        self.budget.pass_ended(started.beyond)
        if self.steps > started.steps:
            self._trained(stats, started)
        elif self._training_forwards > started.training_forwards:
            # It fed training forwards and no step yet: the step comes next.
            self._ended_before_its_step = (stats, started)

    def _trained(self, stats: LoaderStats, started: PassStart) -> None:
        """A pass over ``stats``' loader trained: an epoch of it."""
        passes = self._training_passes.get(id(stats), 0) + 1
        self._training_passes[id(stats)] = passes
        self.budget.pass_trained(started.where, passes)

    def training_forward(self) -> None:
        """Before a training forward (train mode, grad on) of the top module."""
        self._training_forwards += 1
        self._phase_is(TRAIN)
        self.budget.training_forward(max(self._training_passes.values(), default=0))

    def batch(self, stats: LoaderStats, wait_s: float) -> None:
        stats.batches += 1
        stats.data_wait_s += wait_s
        self.hub.batch(stats.origin, wait_s)
        self.budget.batch_taken()

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
        if self._ended_before_its_step is not None:
            # Its batches fed this step (a read-ahead loader ended the pass before it): the
            # pass trained.
            ended, self._ended_before_its_step = self._ended_before_its_step, None
            self._trained(*ended)
        if loop_step:
            self.loop_steps += 1
        self._pass_ended_since_step = False
        self._evals_since_step = 0
        self.budget.step_counted()
        self.steps += 1
        self.hub.train_step(self.steps, now - self._last_step_at)
        self._last_step_at = now
        self.budget.check_time()
        return loop_step

    def step_taken(self, loop_step: bool, *, hand_written: bool = False) -> None:
        """After a counted step: the budget may end the loops around it, or stop the job
        (``Budget.step_taken``)."""
        loop_steps = self.loop_steps if loop_step else None
        self.budget.step_taken(self.steps, loop_steps, hand_written=hand_written)

    def hand_step_starting(self) -> None:
        """Before a hand-written SGD step (a training forward) is counted."""
        self.budget.hand_step_starting()

    def eval_forward(self) -> None:
        """Before a forward of the model in eval mode or without grad: an evaluation loop
        that no DataLoader bounds ends after the eval_forwards budget, or its seconds
        (``Budget.eval_forward``)."""
        self._phase_is(EVAL)
        self.eval_forwards += 1
        self._evals_since_step += 1
        self.budget.eval_forward()

    def trained_then_evaluated(self) -> bool:
        """Whether the script trained and what runs now is evaluation or sampling (the
        model's forwards in eval mode or without grad since): training is over."""
        return self.steps > 0 and self._phase == EVAL

    def _phase_is(self, phase: str) -> None:
        if phase != self._phase:
            self._phase = phase
            if self.shapes is not None:
                self.shapes.phase_started(phase)

    def phases(self) -> Phases:
        """What ran of each phase, for the result (``files_saved`` from the outputs)."""
        saved = sum(1 for o in self.outputs if o.written is not None and o.change != "deleted")
        after = self._evals_since_step if self.steps else 0  # no training: no test phase
        return Phases(
            training_steps=self.steps,
            evaluation_forwards=self.eval_forwards - after,
            test_forwards=after,
            files_saved=saved,
        )

    def loss(self, value: float, step: int) -> None:
        if len(self.losses) < MAX_RECORDED_LOSSES:
            self.losses.append(value)
        if not math.isfinite(value) and not self._nonfinite_loss_said:
            self._nonfinite_loss_said = True
            self._nonfinite_loss(value, step)
        self.hub.loss(step, value)

    def _nonfinite_loss(self, value: float, step: int) -> None:
        """The first NaN/Inf loss: the verdict's, with the user's line that called
        ``backward`` on it (with the NaN hunt, the hunt names the operation first)."""
        file, _, line = caller_origin(skip=3).rpartition(":")
        user_line = is_user_file(file) and line.isdigit()
        hunting = self.nonfinite is not None
        how = "" if hunting else "; run with --find-nonfinite to find the operation that made it"
        problems.report(
            Problem(
                kind=NONFINITE_LOSS,
                message=f"the training loss became {value} at step {step}{how}",
                file=file if user_line else None,
                line=int(line) if user_line else None,
                step=step,
            )
        )

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
        self.budget.finish()  # lets go of the script's frames and globals
        self._ended_before_its_step = None  # its loops' frames too
        # The script's garbage (its module's cycles) finalized now, as python does at its
        # exit: a __del__ that prints is in the run's output, one that writes a file is
        # followed by the journal and put back below.
        gc.collect()
        while self._at_end:
            restored = self._at_end.pop()()
            self.outputs.extend(restored.outputs)
            self.problems.extend(restored.problems)
            self.notes.extend(restored.notes)
            self.file_safety = restored.safety
