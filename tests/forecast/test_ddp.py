"""A DistributedDataParallel step: the module DDP wraps is replayed, and the gradient
buckets DDP's reducer keeps beside the gradients are in the forecast, unless
``gradient_as_bucket_view`` makes the gradients views of them. One rank of gloo in this
process stands in for a rank of NCCL on a GPU."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from tests.forecast.test_forecast import forecast_of

WIDTH = 512
# Two Linear(512, 512): weights and biases in float32.
PARAMETER_BYTES = 2 * (WIDTH * WIDTH + WIDTH) * 4


def _training(ddp: bool, bucket_view: bool = False) -> Callable[[], None]:
    def train() -> None:
        model: nn.Module = nn.Sequential(
            nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, WIDTH)
        )
        model = model.cuda()
        if ddp:
            model = DistributedDataParallel(model, gradient_as_bucket_view=bucket_view)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            loss = model(torch.randn(64, WIDTH, device="cuda")).pow(2).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()

    return train


@pytest.fixture
def one_rank(tmp_path: Path) -> Iterator[None]:
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.mark.usefixtures("one_rank")
def test_ddp_buckets_are_a_second_copy_of_the_gradients(tmp_path: Path) -> None:
    plain = forecast_of(_training(ddp=False), tmp_path / "plain")
    wrapped = forecast_of(_training(ddp=True), tmp_path / "ddp")
    # The same module is replayed: its figures are the plain model's.
    assert [m.name for m in wrapped.modules] == [m.name for m in plain.modules] == ["0", "1", "2"]
    assert wrapped.categories["gradients"] == plain.categories["gradients"] + PARAMETER_BYTES
    assert wrapped.peak == plain.peak + PARAMETER_BYTES


@pytest.mark.usefixtures("one_rank")
def test_gradients_as_bucket_views_take_nothing_more(tmp_path: Path) -> None:
    plain = forecast_of(_training(ddp=False), tmp_path / "plain")
    viewed = forecast_of(_training(ddp=True, bucket_view=True), tmp_path / "ddp")
    assert viewed.categories == plain.categories
    assert viewed.peak == plain.peak
