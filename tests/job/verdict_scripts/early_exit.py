"""A script that builds its model and optimizer, then leaves with sys.exit(0) before its
training loop (here: its data is missing): it ran to its end and trained nothing."""

import os
import sys

import torch
from torch import nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
if not os.path.exists("data/train.bin"):
    print("data/train.bin not found; nothing to train on. Exiting.")
    sys.exit(0)
for _ in range(3):
    loss = model(torch.ones(2, 4)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
