"""The processes a warm-started job's script starts run under the job's limits, as a cold
job's do: a spawn worker is a fresh interpreter that rebuilds the limits from the job's
options, and the warm start (what the warm process imported for the job) is not its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import LanguageClient

from tests.warm.support import printed, result, run_until_warm, training_script

pytestmark = pytest.mark.asyncio

# The DDP tutorial's multigpu.py / mnist_hogwild shape: torch.multiprocessing.spawn starts
# the trainers, each with its own DataLoader, for more epochs than the job allows.
SPAWN_TRAINERS = """\
import argparse
import json
import os

import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset


def train(rank, epochs):
    torch.manual_seed(rank)
    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    print(f"trainer {rank} done", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mark", required=True)
    args = parser.parse_args()
    mp.spawn(train, args=(5,), nprocs=2)
    with open(args.mark, "w") as f:
        json.dump({"ppid": os.getppid()}, f)


if __name__ == "__main__":
    main()
"""


def result_of(run_dir: Path) -> Any:
    return json.loads((run_dir / "result.json").read_text())


async def test_spawned_trainers_of_a_warm_job_run_under_its_limits(
    client: LanguageClient, workspace: Path
) -> None:
    changes, script, mark = training_script(client, workspace, SPAWN_TRAINERS)
    summary, _ = await run_until_warm(client, changes, script, mark)
    job = result(summary)
    output = printed(summary)
    assert "runs without the job's limits" not in output, output
    assert job["status"] == "passed", (job["error"], output)
    children = job["children"]
    assert sorted(c["name"] for c in children) == ["SpawnProcess-1", "SpawnProcess-2"], output
    for child in children:
        # The 2-batch limit: each trainer's first pass ends after 2 of its 8 batches, and
        # the start of its second ends the epoch loop (train_passes), instead of 5 passes
        # of 8: the trainer goes on after it, as the job's own loops do.
        assert (child["status"], child["stop_reason"]) == ("passed", "completed"), child
        assert (child["optimizer_steps"], child["batches"]) == (2, 2), child
        own = result_of(Path(summary["runDir"]) / child["run_dir"])
        assert own["limits"]["batches"] == 2 and own["limits"]["train_passes"] == 1
        assert [loop["budget"] for loop in own["loops_ended"]] == ["train_passes"], own
    assert job["optimizer_steps"] == 4
    assert "trainer 0 done" in output and "trainer 1 done" in output, output
