"""A model of many small ops (a deep, narrow MLP): the case where a per-call cost in
the job (the device engine's TorchFunctionMode) shows most. Run by overhead.py.

    python benchmarks/workloads/small_ops.py --steps N      # plain, N optimizer steps
"""

from __future__ import annotations

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    args = parser.parse_args()
    torch.manual_seed(0)
    blocks = [nn.Sequential(nn.Linear(16, 16), nn.LayerNorm(16), nn.GELU()) for _ in range(24)]
    model = nn.Sequential(*blocks, nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(8, 16), torch.randn(8, 1)
    for _ in range(args.steps):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


if __name__ == "__main__":
    main()
