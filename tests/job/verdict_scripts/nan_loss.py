"""A regression loss that goes NaN on the second step (log of a negative prediction), then
the script's own end: the test reads its last line to know the code after training ran."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.ones(8, 4), torch.ones(8, 1)) for _ in range(4)]
for step, (x, y) in enumerate(data):
    pred = model(x)
    if step == 1:
        pred = pred - 100.0  # a bug: the prediction goes negative
    loss = (torch.log(pred.abs() if step == 0 else pred) * y).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.save(model.state_dict(), "final.pt")
print("after training: saved")
