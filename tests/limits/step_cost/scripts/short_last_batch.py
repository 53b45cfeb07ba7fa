"""65 samples in batches of 64: the second batch holds one sample, which the BatchNorm of the
head cannot normalise in training (unless --drop-last drops it)."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--drop-last", action="store_true")
args = parser.parse_args()

data = TensorDataset(torch.randn(65, 16), torch.randint(0, 2, (65,)))
loader = DataLoader(data, batch_size=64, drop_last=args.drop_last)
model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("trained")
