"""Models built under a default device, as large-model code does: on the GPU through
``with torch.device("cuda")`` or ``set_default_device``, and on ``meta`` first, then
materialised with ``to_empty``."""

import torch
from torch import nn

with torch.device("cuda"):
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
with torch.device("meta"):
    shadow = nn.Linear(16, 2)
assert shadow.weight.device.type == "meta", shadow.weight.device
shadow = shadow.to_empty(device="cuda")
torch.set_default_device("cuda")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _step in range(100):
    x, y = torch.randn(8, 16), torch.randint(0, 2, (8,))
    loss = nn.functional.cross_entropy(model(x) + shadow(x).detach(), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
print("DEVICES", model[0].weight.device, shadow.weight.device, torch.get_default_device())
