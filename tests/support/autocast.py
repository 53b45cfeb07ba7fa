"""Pin what a CUDA autocast region runs in on this CPU, through the product's own cache of
measured speeds (``limits/device/autocast.py``): a test then does not depend on whether this
CPU computes half precision fast."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from quickdev.limits.device import autocast

# Relative to float32, as the job measures them.
SLOW_HALF = {"float32": 1.0, "bfloat16": 0.17, "float16": 0.05}  # a CPU without bf16
FAST_BF16 = {"float32": 1.0, "bfloat16": 1.8, "float16": 0.05}  # AVX512-BF16, AMX
FAST_FP16 = {"float32": 1.0, "bfloat16": 1.2, "float16": 1.9}  # AMX-FP16, AVX512-FP16


def pin_cpu_autocast(
    monkeypatch: pytest.MonkeyPatch, cache: Path, speeds: dict[str, float]
) -> None:
    """Jobs started after this (in this process, or children inheriting its environment)
    read ``speeds`` as this machine's measured figures."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    path = cache / "quickdev" / autocast.CACHE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({autocast._machine_key(): speeds}))
