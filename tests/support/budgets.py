"""A job's Budget for in-process tests: only the bounds a test names, the others off."""

from __future__ import annotations

from quickdev.limits.budget import Budget
from quickdev.options import Budgets
from quickdev.rundir.option_table import EVAL_FORWARDS, LOOP_STEPS, MAX_STEPS, TIMEOUT, TRAIN_PASSES


def make_budget(
    max_steps: int | None = None,
    timeout_s: float | None = None,
    train_passes: int | None = None,
    loop_steps: int | None = None,
    eval_forwards: int | None = None,
) -> Budget:
    values = {
        MAX_STEPS: max_steps,
        TIMEOUT: timeout_s,
        TRAIN_PASSES: train_passes,
        LOOP_STEPS: loop_steps,
        EVAL_FORWARDS: eval_forwards,
    }
    return Budget(Budgets(values))
