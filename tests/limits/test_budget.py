"""The step and wall-clock budgets, as the limits check them where they count."""

from __future__ import annotations

import time

import pytest
from quickdev.limits.budget import StopJob

from tests.support.budgets import make_budget


def test_a_step_budget_is_reached_at_its_count_not_before() -> None:
    budget = make_budget(max_steps=3, loop_steps=2)
    assert budget.step_budget_reached(1, 1) is None
    assert budget.step_budget_reached(2, 2) == ("loop_steps", 2, 2)
    assert budget.step_budget_reached(2, None) is None  # a step from a DataLoader batch
    assert budget.step_budget_reached(3, None) == ("max_steps", 3, 3)


def test_no_step_budget_is_never_reached() -> None:
    budget = make_budget()
    assert budget.step_budget_reached(10**9, 10**9) is None
    assert not budget.ends_loops()
    assert make_budget(eval_forwards=20).ends_loops()


def test_a_user_except_exception_cannot_swallow_the_stop() -> None:
    with pytest.raises(StopJob):
        try:
            raise StopJob("max_steps")
        except Exception:  # the user's own guard around a training step
            pytest.fail("StopJob was caught as an Exception")


def test_steps_left_to_a_trainer_are_never_reached_by_the_step_hook() -> None:
    budget = make_budget(max_steps=3)
    budget.leave_steps_to_trainer()
    assert budget.step_budget_reached(5, None) is None  # the trainer ends itself, gracefully


def test_the_deadline_counts_from_start() -> None:
    budget = make_budget(max_steps=None, timeout_s=0.05)
    budget.check_time()  # not started: no deadline yet
    budget.start()
    budget.check_time()
    time.sleep(0.06)
    with pytest.raises(StopJob) as stopped:
        budget.check_time()
    assert stopped.value.reason == "timeout"


def test_no_timeout_has_no_deadline() -> None:
    budget = make_budget(max_steps=None, timeout_s=None)
    budget.start()
    assert budget.deadline is None
    budget.check_time()
