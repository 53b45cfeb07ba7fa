"""A small real training loop that fires the job's events, as the limits do.

The profiling observers on real torch, a real DataLoader, a real optimizer; only the
event calls are ours.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from quickdev.events import EventHub
from quickdev.options import ProfileOptions
from quickdev.profiling.observers import profiling_observers
from quickdev.profiling.sampler import ResourceSampler
from quickdev.rundir.result import JobResult
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
        run_dir.mkdir(parents=True)
        hub = EventHub()
        if sample_interval_s:
            hub.add(ResourceSampler(run_dir, sample_interval_s))
        for observer in profiling_observers(profile, run_dir):
            hub.add(observer)
        hub.setup()
        train(hub, steps, item_delay_s, fetch_without_step)
        result = JobResult(id=run_dir.name)
        hub.result(result)
        return Job(run_dir, result)

    return run
