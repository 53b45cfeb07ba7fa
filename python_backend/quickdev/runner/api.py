"""In-process API. Placeholder until the runner lands."""

from __future__ import annotations

from typing import Any


def run(script_or_callable: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("the runner is not written yet")
