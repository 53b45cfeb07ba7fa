"""Tabular regression whose model standardises each batch itself. The data is sorted by a
sensor id, and one sensor reports a constant: its batch has a zero std."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class BatchStandardize(nn.Module):
    def forward(self, x):
        mean = x.mean(dim=0, keepdim=True)
        std = x.std(dim=0, keepdim=True)
        return (x - mean) / std


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = BatchStandardize()
        self.head = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x):
        return self.head(self.norm(x))


def make_data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(320, 6, generator=g)
    x[224:256] = torch.tensor([0.5, -1.0, 2.0, 0.0, 1.5, -0.5])  # sensor 7 is stuck
    y = x.sum(dim=1, keepdim=True)
    return TensorDataset(x, y)


def main():
    loader = DataLoader(make_data(), batch_size=32)
    model = Regressor()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(3):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch}: {loss.item():.4f}")


if __name__ == "__main__":
    main()
