"""One epoch: the script's own --epochs option, left at its default, becomes 1."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import quickdev

SCRIPT = """
import argparse
import json
import torch
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser()
parser.add_argument("--num-epochs", type=int, default=4)
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
loader = DataLoader(torch.randn(40, 2), batch_size=4)
for epoch in range(args.num_epochs):
    for batch in loader:
        optimizer.zero_grad()
        model(batch).pow(2).mean().backward()
        optimizer.step()
    print(f"epoch {epoch} done")
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def test_default_epochs_become_one(run_quickdev: Any, script: Path, tmp_path: Path) -> None:
    run = run_quickdev(str(script), cwd=tmp_path, json_output=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("done") == 1
    assert "one epoch: --num-epochs set to 1" in run.stderr  # the terminal user is told
    (result_file,) = (tmp_path / ".quickdev" / "runs").glob("*/result.json")
    result = json.loads(result_file.read_text())
    (loader,) = result["loaders"]
    assert (loader["passes"], loader["batches"]) == (1, 2)
    assert result["limits"]["one_epoch_options"] == ["--num-epochs"]


@pytest.mark.parametrize(
    "given", [["--num-epochs", "3"], ["--num-epochs=3"], ["--num-ep", "3"]], ids=str
)
def test_epochs_given_on_the_command_line_are_kept(
    run_quickdev: Any, script: Path, tmp_path: Path, given: list[str]
) -> None:
    run = run_quickdev(str(script), "--", *given, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("done") == 3
    assert run.result["limits"]["one_epoch_options"] == []


def test_no_limits_keeps_every_epoch(run_quickdev: Any, script: Path, tmp_path: Path) -> None:
    run = run_quickdev("--no-limits", str(script), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("done") == 4


def test_in_process_run_puts_argparse_back(script: Path, tmp_path: Path) -> None:
    result = quickdev.run(script, runs_dir=tmp_path / "runs")
    assert result.status == "passed", result.error
    assert result.limits.one_epoch_options == ["--num-epochs"]
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    assert parser.parse_args([]).epochs == 5
