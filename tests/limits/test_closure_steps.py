"""A closure optimizer's step counts its closure's passes: LBFGS runs its closure up to
``max_iter`` times per ``step()``, and each pass is a forward and a backward."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# time_sequence_prediction's idiom: the whole data set in memory, LBFGS with a closure,
# a fixed number of steps (no DataLoader), a no-grad prediction after each step.
LBFGS_SCRIPT = """
import torch
from torch import nn

torch.manual_seed(0)
x = torch.linspace(0, 6, 64).unsqueeze(1)
y = torch.sin(x)
model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
criterion = nn.MSELoss()
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.8, max_iter=20{line_search})
for i in range({steps}):
    print("STEP:", i, flush=True)

    def closure():
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        print("closure ran, loss:", loss.item(), flush=True)
        loss.backward()
        return loss

    optimizer.step(closure)
    with torch.no_grad():
        print("test loss:", criterion(model(x), y).item(), flush=True)
print("training done")
"""

# A closure optimizer fed by a DataLoader: one SGD step per batch runs its closure once.
LOADER_SCRIPT = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for xb, yb in DataLoader(data, batch_size=8):
    def closure():
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        print("closure ran", flush=True)
        loss.backward()
        return loss
    optimizer.step(closure)
"""


def _run(run_quickdev: Any, tmp_path: Path, source: str, *args: str) -> Any:
    script = tmp_path / "train.py"
    script.write_text(source)
    run = run_quickdev("--runs-dir", str(tmp_path / "runs"), *args, str(script), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.result is not None
    return run


def test_lbfgs_ends_within_the_loop_budget_counted_in_closure_passes(
    run_quickdev: Any, tmp_path: Path
) -> None:
    run = _run(run_quickdev, tmp_path, LBFGS_SCRIPT.format(steps=15, line_search=""))
    # Default flags: hand-made batches get --batches (2) loop steps; a pass is a step,
    # so the first LBFGS step (20 iterations asked) ends after two passes.
    assert run.stdout.count("closure ran") == 2
    assert run.result["optimizer_steps"] == 2
    assert run.result["loop_batches"] == 2
    assert len(run.result["losses"]) == 2
    # The budget ended the script's loop, not the script: what follows it ran.
    assert run.result["status"] == "passed" and "training done" in run.stdout
    assert [(e["line"], e["budget"]) for e in run.result["loops_ended"]] == [(11, "loop_steps")]


def test_max_steps_counts_passes_across_lbfgs_steps(run_quickdev: Any, tmp_path: Path) -> None:
    # max_iter 20 with at most 7 passes: the first step ends early only if the budget
    # says so, so a step count of 7 proves the passes were counted, not the steps.
    run = _run(
        run_quickdev,
        tmp_path,
        LBFGS_SCRIPT.format(steps=15, line_search=""),
        "--max-steps", "7", "--loop-steps", "0",
    )  # fmt: skip
    assert run.stdout.count("closure ran") == 7
    assert run.stdout.count("STEP:") == 1
    assert run.result["optimizer_steps"] == 7 and "training done" in run.stdout
    assert [(e["line"], e["budget"]) for e in run.result["loops_ended"]] == [(11, "max_steps")]


def test_a_line_search_ends_too_once_the_budget_is_spent(run_quickdev: Any, tmp_path: Path) -> None:
    # A strong-Wolfe line search evaluates the closure many times within one iteration;
    # spent, the closure answers its last loss and the search gives up.
    run = _run(
        run_quickdev,
        tmp_path,
        LBFGS_SCRIPT.format(steps=15, line_search=', line_search_fn="strong_wolfe"'),
        "--max-steps", "3", "--loop-steps", "0",
    )  # fmt: skip
    assert run.stdout.count("closure ran") == 3
    assert run.result["optimizer_steps"] == 3


def test_a_closure_run_once_per_step_is_one_step(run_quickdev: Any, tmp_path: Path) -> None:
    run = _run(run_quickdev, tmp_path, LOADER_SCRIPT, "--batches", "3")
    assert run.stdout.count("closure ran") == 3
    assert run.result["optimizer_steps"] == 3
    assert run.result["loop_batches"] == 0
    assert run.result["status"] == "passed"
