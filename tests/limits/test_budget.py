"""The step and wall-clock budgets, as the limits check them where they count."""

from __future__ import annotations

import time

import pytest
from quickdev.limits.budget import StopJob

from tests.support.budgets import make_budget


def test_steps_stop_the_job_at_the_budget_not_before() -> None:
    budget = make_budget(max_steps=3, timeout_s=None)
    budget.check_steps(2)
    with pytest.raises(StopJob) as stopped:
        budget.check_steps(3)
    assert stopped.value.reason == "max_steps"
    assert not budget.reached_by_trainer(3)


def test_no_step_budget_never_stops() -> None:
    make_budget(max_steps=None, timeout_s=None).check_steps(10**9)


def test_a_user_except_exception_cannot_swallow_the_stop() -> None:
    budget = make_budget(max_steps=1, timeout_s=None)
    with pytest.raises(StopJob):
        try:
            budget.check_steps(1)
        except Exception:  # the user's own guard around a training step
            pytest.fail("StopJob was caught as an Exception")


def test_steps_left_to_a_trainer_end_gracefully() -> None:
    budget = make_budget(max_steps=3, timeout_s=None)
    budget.leave_steps_to_trainer()
    budget.check_steps(5)  # the trainer stops itself; the step hook must not
    assert not budget.reached_by_trainer(2)
    assert budget.reached_by_trainer(3)
    unlimited = make_budget(max_steps=None, timeout_s=None)
    unlimited.leave_steps_to_trainer()
    assert not unlimited.reached_by_trainer(10**9)


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


def test_steps_spent_says_what_the_checks_would_stop_at_without_stopping() -> None:
    budget = make_budget(max_steps=3, timeout_s=None)
    assert not budget.steps_spent(2, None)
    assert budget.steps_spent(3, None)
    loops = make_budget(max_steps=None, timeout_s=None, loop_steps=2)
    assert not loops.steps_spent(5, None)  # steps fed by a DataLoader: no loop budget
    assert not loops.steps_spent(5, 1)
    assert loops.steps_spent(5, 2)
    budget.leave_steps_to_trainer()
    assert not budget.steps_spent(3, None)
