"""A loop that only works at the script's own batch size: the flatten names it."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

BATCH_SIZE = 64
data = TensorDataset(torch.randn(512, 8, 4), torch.randint(0, 4, (512,)))
loader = DataLoader(data, batch_size=BATCH_SIZE, shuffle=True)
model = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    out = model(x.view(BATCH_SIZE, -1))
    loss = nn.functional.cross_entropy(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("trained")
