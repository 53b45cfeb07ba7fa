"""A training script that fails a few calls deep in a helper module of its own."""

from __future__ import annotations

import argparse

import torch
from crash_helpers import Projection
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(8, 16)
        self.projection = Projection(features=16, out=4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.projection(torch.relu(self.encoder(x)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    data = TensorDataset(torch.randn(64, 8), torch.randn(64, 4))
    loader = DataLoader(data, batch_size=8)
    model = Model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(args.epochs):
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
