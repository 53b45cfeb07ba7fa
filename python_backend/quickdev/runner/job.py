"""The quick-dev job. Placeholder until the runner lands."""

from __future__ import annotations

from quickdev.runner.options import RunOptions


def run_from_cli(options: RunOptions) -> int:
    raise NotImplementedError("the runner is not written yet")
