"""The torch releases a job is tested with, and every torch API that differs across them.

A job runs in the person's interpreter with the person's torch. ``make compat`` runs the
smoke suite (tools/compat/) on each minor release of ``TESTED_TORCH``; docs/compat.md says
why the range starts where it does. Where a torch API the job uses is not the same on
every release of the range, the job calls the function here instead of torch: one
function per difference, each naming the release that changed it, so the next torch
release that moves something has one place to look.

Torch-free on purpose (the functions take what torch handed over): the language server
and the job's start import it before torch.
"""

from __future__ import annotations

import re
import sys
from typing import Any

# The oldest and newest minor releases of torch (and of Python) that `make compat` tests.
# pyproject.toml's `torch` extra, its Python classifiers and docs/compat.md say the same
# (tests/test_torch_compat.py holds them to these).
TESTED_TORCH = ((2, 8), (2, 14))
TESTED_PYTHON = ((3, 10), (3, 12))


def release(version: str) -> tuple[int, int] | None:
    """``"2.11.0+cu130"`` -> ``(2, 11)``; None for what is not a release number."""
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _span(bounds: tuple[tuple[int, int], tuple[int, int]]) -> str:
    (a, b), (c, d) = bounds
    return f"{a}.{b}–{c}.{d}"


def untested_environment(torch_version: str, python: tuple[int, int] | None = None) -> str | None:
    """One line when the job's torch or Python is outside the tested ranges, else None."""
    python = python or (sys.version_info[0], sys.version_info[1])
    outside = []
    torch_release = release(torch_version)
    low, high = TESTED_TORCH
    if torch_release is None or not low <= torch_release <= high:
        outside.append(f"torch {torch_version} (tested: {_span(TESTED_TORCH)})")
    low, high = TESTED_PYTHON
    if not low <= python <= high:
        outside.append(f"Python {python[0]}.{python[1]} (tested: {_span(TESTED_PYTHON)})")
    if not outside:
        return None
    return (
        f"untested here: {' and '.join(outside)}; most things may work, and a failure may be "
        "quickdev's (docs/compat.md)"
    )


def is_python_function(event: Any) -> bool:
    """Whether a profiler ``FunctionEvent`` is a Python frame rather than an operator.

    torch 2.12 added ``FunctionEvent.is_python_function``: from then on ``with_stack``'s
    Python frames are events of ``profile.events()``. Before 2.12 the attribute does not
    exist and no event is a Python frame.
    """
    return bool(getattr(event, "is_python_function", False))
