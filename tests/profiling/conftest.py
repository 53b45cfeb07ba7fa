"""A small real training loop that fires the runner's job events, as the runner does.

Until the runner drives these hooks itself, this is how the profiler sees a job:
real torch, a real DataLoader, a real optimizer; only the event calls are ours.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from quickdev.profiling.job_hooks import attach_to_job
from quickdev.runner.events import EventHub
from quickdev.runner.options import ProfileOptions, RunOptions
from quickdev.runner.result import JobResult
from torch import nn
from torch.utils.data import DataLoader, Dataset

ORIGIN = "train.py:12"


class SlowDataset(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.x = torch.randn(64, 32)
        self.y = torch.randn(64, 1)

    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.delay_s:
            time.sleep(self.delay_s)  # a slow input pipeline, on purpose
        return self.x[i], self.y[i]


def train(
    hub: EventHub, steps: int, item_delay_s: float = 0.0, fetch_without_step: bool = False
) -> None:
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(SlowDataset(item_delay_s), batch_size=8)
    hub.job_start()
    it = iter(loader)
    for step in range(steps):
        t0 = time.perf_counter()
        x, y = next(it)
        hub.batch(ORIGIN, time.perf_counter() - t0)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        hub.train_step(step + 1, time.perf_counter() - t0)
    if fetch_without_step:  # as when the next step crashes
        t0 = time.perf_counter()
        next(it)
        hub.batch(ORIGIN, time.perf_counter() - t0)
    hub.job_end()


@dataclass
class Job:
    run_dir: Path
    result: JobResult


@pytest.fixture
def run_job(tmp_path: Path):  # type: ignore[no-untyped-def]
    def run(
        steps: int,
        profile: ProfileOptions | None = None,
        item_delay_s: float = 0.0,
        sample_interval_s: float | None = None,
        fetch_without_step: bool = False,
    ) -> Job:
        run_dir = tmp_path / "runs" / f"run{len(list(tmp_path.glob('runs/*')))}"
        options = RunOptions(
            script="train.py", profile=profile, sample_interval_s=sample_interval_s
        )
        hub = EventHub()
        finish = attach_to_job(options, run_dir, hub)
        train(hub, steps, item_delay_s, fetch_without_step)
        result = JobResult(id=run_dir.name)
        finish(result)
        return Job(run_dir, result)

    return run
