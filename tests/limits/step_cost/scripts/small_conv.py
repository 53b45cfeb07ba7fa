"""A small step (tens of millions of FLOPs): cheap on any CPU. Its wide head makes the
parameters times the batch's elements large, so it is not known cheap without a look."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,)))
loader = DataLoader(data, batch_size=16)
model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(8, 20000),
    nn.ReLU(),
    nn.Linear(20000, 10),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("trained on", x.shape[0])
