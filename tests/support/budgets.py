"""A job's Budget for in-process tests: only the bounds a test names, the others off."""

from __future__ import annotations

from quickdev.limits.budget import Budget
from quickdev.options import Budgets


def make_budget(
    max_steps: int | None = None,
    timeout_s: float | None = None,
    train_passes: int | None = None,
    loop_steps: int | None = None,
    eval_forwards: int | None = None,
    eval_seconds: float | None = None,
    eval_at_least: int = 1,
) -> Budget:
    return Budget(
        Budgets(
            max_steps,
            timeout_s,
            train_passes,
            loop_steps,
            eval_forwards,
            eval_seconds=eval_seconds,
            eval_at_least=eval_at_least,
        )
    )
