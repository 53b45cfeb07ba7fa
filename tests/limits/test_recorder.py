"""The Recorder keeps what result.json reports and tells the observers the same events."""

from __future__ import annotations

from typing import Any

import pytest
from quickdev.events import BaseObserver, EventHub
from quickdev.limits.budget import Budget, StopJob
from quickdev.limits.recorder import MAX_RECORDED_LOSSES, Recorder

from tests.support.budgets import make_budget


class Seen(BaseObserver):
    def __init__(self) -> None:
        self.batches: list[tuple[str, float]] = []
        self.steps: list[int] = []
        self.losses: list[tuple[int, float]] = []

    def on_batch(self, origin: str, wait_s: float) -> None:
        self.batches.append((origin, wait_s))

    def on_train_step(self, step: int, step_time_s: float) -> None:
        assert step_time_s >= 0
        self.steps.append(step)

    def on_loss(self, step: int, value: float) -> None:
        self.losses.append((step, value))


def recorder(budget: Budget | None = None) -> tuple[Recorder, Seen]:
    hub = EventHub()
    seen = Seen()
    hub.add(seen)
    return Recorder(hub, budget or make_budget()), seen


def test_batches_are_counted_per_loader_and_observed() -> None:
    rec, seen = recorder()
    train, val = rec.new_loader("train.py:10"), rec.new_loader("train.py:11")
    rec.batch(train, 0.25)
    rec.batch(train, 0.5)
    rec.batch(val, 0.125)
    assert (train.batches, train.data_wait_s) == (2, 0.75)
    assert (val.batches, val.data_wait_s) == (1, 0.125)
    assert rec.loaders == [train, val]
    assert seen.batches == [("train.py:10", 0.25), ("train.py:10", 0.5), ("train.py:11", 0.125)]


def test_steps_are_numbered_from_one() -> None:
    rec, seen = recorder()
    rec.train_step()
    rec.train_step()
    assert rec.steps == 2
    assert seen.steps == [1, 2]


def test_losses_kept_up_to_the_cap_but_all_observed() -> None:
    rec, seen = recorder()
    for step in range(MAX_RECORDED_LOSSES + 5):
        rec.loss(float(step), step)
    assert len(rec.losses) == MAX_RECORDED_LOSSES
    assert rec.losses[-1] == MAX_RECORDED_LOSSES - 1
    assert len(seen.losses) == MAX_RECORDED_LOSSES + 5


def test_a_redirection_is_recorded_once() -> None:
    rec, _ = recorder()
    rec.redirected("/home/me/model.pt", "/runs/r1/outputs/model.pt")
    rec.redirected("/home/me/model.pt", "/runs/r1/outputs/model.pt")
    rec.redirected("/home/me/other.pt", "/runs/r1/outputs/other.pt")
    assert [r.requested for r in rec.outputs] == ["/home/me/model.pt", "/home/me/other.pt"]


def test_batches_and_steps_check_the_deadline() -> None:
    budget = make_budget(max_steps=None, timeout_s=0.0)
    budget.start()
    rec, seen = recorder(budget)
    with pytest.raises(StopJob, match="timeout"):
        rec.batch(rec.new_loader("train.py:3"), 0.0)
    with pytest.raises(StopJob, match="timeout"):
        rec.train_step()
    assert len(seen.batches) == 1 and seen.steps == [1]  # counted, then stopped


class _Hostile:
    """A setting value of the script's own (a strategy object, say) whose == and repr raise."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparing me")

    def __repr__(self) -> str:
        raise RuntimeError("no printing me")

    __hash__ = object.__hash__


def test_replaced_settings_are_recorded_once_and_any_value_is_named_safely() -> None:
    recorder = Recorder(EventHub(), make_budget(max_steps=None, timeout_s=None))
    given = {"max_epochs": 10, "fast_dev_run": True, "precision": "bf16-mixed"}
    recorder.settings_overridden("Trainer", given, {"max_epochs": 1, "precision": "bf16-mixed"})
    recorder.settings_overridden("Trainer", {"max_epochs": 10}, {"max_epochs": 1})
    # A value the job cannot compare or print must not fail the script's Trainer(...).
    recorder.settings_overridden("Trainer", {"strategy": _Hostile()}, {"strategy": "auto"})
    assert recorder.settings_changed == [
        "Trainer.max_epochs: 10 → 1",
        "Trainer.fast_dev_run: True → removed",
        "Trainer.strategy: <_Hostile> → 'auto'",
    ]


def test_a_forked_child_restarts_counting_with_the_loaders_it_inherited() -> None:
    rec, parent_seen = recorder(make_budget(loop_steps=5))
    inherited = rec.new_loader("train.py:10")
    rec.batch(inherited, 0.5)
    rec.train_step()
    rec.loss(1.0, 1)
    child_seen = Seen()
    hub = EventHub()
    hub.add(child_seen)
    rec.restart(hub)
    assert (rec.steps, rec.loop_steps, rec.losses) == (0, 0, [])
    assert rec.loaders == [inherited] and (inherited.batches, inherited.data_wait_s) == (0, 0.0)
    rec.batch(inherited, 0.25)  # the child iterates the loader its parent made
    rec.train_step()
    assert (inherited.batches, rec.steps) == (1, 1)
    assert child_seen.steps == [1] and parent_seen.steps == [1]  # each told its own hub


class Phases(list[str]):
    """A shape recording that hears only of phase switches."""

    def phase_started(self, phase: str) -> None:
        self.append(phase)

    def forward_starting(self, args: Any) -> None:
        pass

    def budget_cut(self, frame: Any, loop_line: int, cut: Any) -> None:
        pass


def test_a_forked_child_still_tells_the_shape_recording_of_phase_switches() -> None:
    phases = Phases()
    rec = Recorder(EventHub(), make_budget(), shapes=phases)
    rec.training_forward()
    rec.restart(EventHub())
    rec.eval_forward()
    rec.training_forward()
    assert phases == ["train", "eval", "train"]


def test_a_pass_that_ended_before_its_step_is_a_training_pass() -> None:
    """A loader that reads ahead (accelerate's) ends a pass as it hands out the pass's last
    batch, before the step that batch feeds; with gradient accumulation over the whole
    pass, that step is the pass's only one."""
    rec, _ = recorder(make_budget(train_passes=1))
    train = rec.new_loader("train.py:10")
    started = rec.pass_starting(train)
    rec.batch(train, 0.0)
    rec.training_forward()
    rec.batch(train, 0.0)
    rec.pass_ended(train, started)  # read ahead: ended before the second micro-batch's forward
    rec.training_forward()
    rec.train_step()
    # The pass trained: the next starts beyond the budget, and with no loop of the user's
    # to end, a training forward in it stops the job.
    rec.pass_starting(train)
    with pytest.raises(StopJob):
        rec.training_forward()


def test_a_pass_without_a_step_before_the_next_pass_is_no_training_pass() -> None:
    rec, _ = recorder(make_budget(train_passes=1))
    val, train = rec.new_loader("train.py:11"), rec.new_loader("train.py:10")
    rec.pass_ended(val, rec.pass_starting(val))  # evaluated first, no step
    started = rec.pass_starting(train)
    rec.training_forward()
    rec.train_step()
    rec.pass_ended(train, started)
    # The evaluation loader's pass did not train: its next pass is within the budget.
    rec.pass_starting(val)
    rec.training_forward()
