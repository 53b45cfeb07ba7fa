"""Inference only: a model evaluated on a few batches, no optimizer, no training loop."""

import torch
from torch import nn

model = nn.Linear(4, 1).eval()
with torch.no_grad():
    for _ in range(3):
        out = model(torch.ones(2, 4))
print("inference done", tuple(out.shape))
