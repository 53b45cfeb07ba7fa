"""How long a memory forecast takes: a GPT-style model and a CNN (goal: ≤ 5 s each).

nanoGPT's character-level Shakespeare configuration (6 layers of 384, batch 64 of 256
tokens, bfloat16 autocast, AdamW) and a CIFAR ResNet-18 (batch 128, SGD with momentum), each
run as a quick-dev job in this process with ``memory_forecast``: the job takes one real
step on this CPU, then replays it on fake tensors. Beside the forecast's own time (from the
result) the real step's is printed: the replay's cost does not grow with the sizes it
forecasts, the real step's does. The last line holds both forecasts' seconds.

    python benchmarks/memory_forecast.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Run as a script: the repository root (home of the tests package) instead of this folder,
# whose profile.py would stand in for the standard library's (cProfile, which torch imports).
sys.path[0] = str(REPO)

import quickdev  # noqa: E402
from quickdev.rundir.memory import format_size  # noqa: E402

from tests.forecast import models  # noqa: E402

GOAL_S = 5.0
WORKLOADS: dict[str, Callable[[], None]] = {
    "gpt (nanoGPT shakespeare-char)": models.gpt_training(batch=64, block=256, layers=6, width=384),
    "cnn (ResNet-18, CIFAR)": models.cnn_training(batch=128, images=256),
}


def measure(name: str, train: Callable[[], None], runs_dir: Path) -> float:
    started = time.perf_counter()
    result = quickdev.run(train, 1, memory_forecast="24", runs_dir=runs_dir)
    wall = time.perf_counter() - started
    forecast = result.memory_forecast
    if forecast is None or forecast.peak is None:
        raise SystemExit(f"{name}: no forecast ({forecast.error if forecast else result.error})")
    step = wall - forecast.duration_s
    print(
        f"{name}: forecast {forecast.duration_s:.2f} s (goal ≤ {GOAL_S:g}), "
        f"{forecast.headline()}, {len(forecast.modules)} modules; "
        f"the job's real CPU run around it {step:.1f} s; "
        f"activations {format_size(forecast.categories['activations'])}"
    )
    return forecast.duration_s


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        seconds = {name: measure(name, fn, Path(folder)) for name, fn in WORKLOADS.items()}
    figures = ", ".join(f"{name.split()[0]} {s:.2f}" for name, s in seconds.items())
    print(f"memory forecast seconds: {figures} (goal ≤ {GOAL_S:g})")


if __name__ == "__main__":
    main()
