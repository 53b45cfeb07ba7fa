"""Advice after a budget names the knob that would have helped, never one the job set:
after training, the clock runs out in evaluation or sampling, where a training knob changes
nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quickdev.job.advice import advice_for
from quickdev.job.target import ScriptTarget
from quickdev.options import RunOptions
from quickdev.rundir.result import JobResult

# imagenet's shape: epochs and a batch size as options, a DataLoader, and a training
# step that costs more than a quick-dev job's time (resnet50 at batch 256 on a CPU).
COSTLY_STEP = """
import argparse
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", default=90, type=int)
parser.add_argument("-b", "--batch-size", default=256, type=int)
args = parser.parse_args()

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = TensorDataset(torch.randn(1024, 4), torch.randn(1024, 1))
loader = DataLoader(data, batch_size=args.batch_size)
for epoch in range(args.epochs):
    for inputs, targets in loader:
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        time.sleep(600)  # the forward and backward of a large model at this batch size
        loss.backward()
        optimizer.step()
"""

# A loop the hunt can run to its horizon without meeting a NaN.
FINITE_LOOP = """
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--iters", default=5000, type=int)
args = parser.parse_args()

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for it in range(args.iters):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_timeout_advice_names_the_batch_size_not_the_epochs_the_job_set(
    run_quickdev: Any, tmp_path: Path
) -> None:
    (tmp_path / "main.py").write_text(COSTLY_STEP)
    run = run_quickdev("--timeout", "20", "main.py", "--", "--epochs", "1", cwd=tmp_path)
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("stopped", "timeout"), run.stderr
    assert result["optimizer_steps"] == 0  # the budget ended the first step, not the epochs
    advice = result["stop_advice"]
    assert "--epochs" not in advice, advice
    assert "--batch-size (default 256) at main.py:10" in advice, advice
    assert advice.endswith("pass -- --batch-size 32 for a verdict in seconds")


def test_the_hunts_advice_is_its_horizon_not_the_scripts_steps(
    run_quickdev: Any, tmp_path: Path
) -> None:
    (tmp_path / "loop.py").write_text(FINITE_LOOP)
    run = run_quickdev("--find-nonfinite", "--max-steps", "5", "loop.py", cwd=tmp_path)
    result = run.result
    # The script ran on past its loop: the hunt's horizon ended the loop, not the job.
    assert [e["budget"] for e in result["loops_ended"]] == ["max_steps"], run.stderr
    advice = result["stop_advice"]
    assert "--iters" not in advice, advice  # a shorter loop finds no NaN sooner
    assert advice.startswith("the NaN hunt found no NaN/Inf in its 5 training steps"), advice
    assert "--max-steps 20" in advice


def test_a_hunt_the_timeout_ended_is_told_the_time_its_horizon_needs(
    run_quickdev: Any, tmp_path: Path
) -> None:
    # Each step takes a while (mnist on a CPU): the 500-step hunt cannot end in the time.
    (tmp_path / "loop.py").write_text(
        FINITE_LOOP.replace(
            "    optimizer.step()", "    optimizer.step()\n    time.sleep(0.2)"
        ).replace("import argparse", "import argparse\nimport time")
    )
    # 60 s: a loaded machine takes half of it to import torch and start the hunt.
    run = run_quickdev("--find-nonfinite", "--timeout", "60", "loop.py", cwd=tmp_path)
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("stopped", "timeout"), run.stderr
    steps = result["optimizer_steps"]
    assert 1 < steps < 500
    advice = result["stop_advice"]
    assert advice.startswith(f"the NaN hunt trained {steps} of its 500 steps before the 60 s"), (
        advice
    )
    assert "quickdev run --find-nonfinite --timeout " in advice and "--iters" not in advice


# A job that trained a few steps before the clock ran out.
OPTIONS = RunOptions()
TRAINED = JobResult(id="r", optimizer_steps=5)

SCRIPT = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=5000)
parser.add_argument("--eval-iters", type=int, default=200)
args = parser.parse_args()
"""


def _target(tmp_path: Path, source: str) -> ScriptTarget:
    script = tmp_path / "train.py"
    script.write_text(source)
    return ScriptTarget(str(script), [])


def test_a_timeout_while_training_names_the_step_knob(tmp_path: Path) -> None:
    advice = advice_for("timeout", _target(tmp_path, SCRIPT), OPTIONS, TRAINED)
    assert advice is not None and advice.startswith("--steps (default 5000)")


def test_a_timeout_after_training_names_no_training_knob(tmp_path: Path) -> None:
    advice = advice_for("timeout", _target(tmp_path, SCRIPT), OPTIONS, TRAINED, after_training=True)
    assert advice is not None and advice.startswith("--eval-iters (default 200)")
    without_eval_knob = SCRIPT.replace(
        'parser.add_argument("--eval-iters", type=int, default=200)', ""
    )
    target = _target(tmp_path, without_eval_knob)
    assert advice_for("timeout", target, OPTIONS, TRAINED, after_training=True) is None
