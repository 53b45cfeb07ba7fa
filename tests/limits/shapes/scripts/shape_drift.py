"""A line whose shape changes while the model's inputs keep theirs: a state that grows
after a few steps, long after the line was last looked at."""

import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4)
for step in range(12):
    memory = torch.zeros(2 if step < 5 else 3)
    loss = model(x).pow(2).mean() + memory.sum()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
