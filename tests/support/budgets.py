"""A job's Budget for in-process tests: only the bounds a test names, the others off.

A bound is named as the option table names it, or by its key in result.json
(``timeout_s``): ``make_budget(max_steps=3, timeout_s=None)``."""

from __future__ import annotations

from quickdev.limits.budget import Budget
from quickdev.rundir import option_table
from quickdev.rundir.option_table import Value


def make_budget(
    *, eval_seconds: float | None = None, eval_at_least: int = 1, **bounds: Value | None
) -> Budget:
    names = {limit.result_key: limit.name for limit in option_table.LIMITS}
    values: dict[str, Value | None] = dict.fromkeys(names.values())
    for key, value in bounds.items():
        name = names.get(key, key)
        assert name in values, f"no limit {key} in the option table"
        values[name] = value
    return Budget(values, eval_seconds=eval_seconds, eval_at_least=eval_at_least)
