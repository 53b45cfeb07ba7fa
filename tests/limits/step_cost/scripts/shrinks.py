"""A DataLoader training loop with an evaluation pass after it (the step-cost tests' own
script). Each sample carries its index, and each step prints the indices it got."""

import argparse
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--epochs", type=int, default=3)
args = parser.parse_args()


class Indexed(Dataset):
    def __len__(self) -> int:
        return 512

    def __getitem__(self, index: int):
        features = torch.full((32,), float(index % 7))
        return features, index % 4, index


generator = torch.Generator().manual_seed(0)
loader = DataLoader(Indexed(), batch_size=args.batch_size, shuffle=True, generator=generator)
val_loader = DataLoader(Indexed(), batch_size=2 * args.batch_size)
model = nn.Sequential(nn.Linear(32, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _epoch in range(args.epochs):
    model.train()
    for x, y, index in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        print(f"step on samples {index.tolist()} loss {loss.item():.3f}", file=sys.stderr)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        for x, y, index in val_loader:
            correct = (model(x).argmax(1) == y).float().mean().item()
            print(f"evaluated {len(index)} samples: {correct:.2f}", file=sys.stderr)
print("done", file=sys.stderr)
