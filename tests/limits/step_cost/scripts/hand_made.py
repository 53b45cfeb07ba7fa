"""Hand-made batches (rows sliced from one tensor), no DataLoader."""

import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--iters", type=int, default=1000)
args = parser.parse_args()

data, labels = torch.randn(4096, 16), torch.randint(0, 2, (4096,))
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _step in range(args.iters):
    rows = torch.randint(0, len(data), (args.batch_size,))
    loss = nn.functional.cross_entropy(model(data[rows]), labels[rows])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("batch", args.batch_size)
