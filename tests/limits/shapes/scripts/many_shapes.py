"""Lines run many times: sequences of many lengths looked at one by one, and a hand-unrolled
recurrent cell whose step line runs once per time step of every forward."""

import torch
from torch import nn

STEPS = 200
LENGTHS = list(range(3, 15))  # twelve distinct lengths
unrolled = 0

sequences = []
for n in LENGTHS:
    seq = torch.randn(1, n, 4)
    sequences.append(seq)


class Unrolled(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.RNNCell(4, 8)
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        global unrolled
        h = torch.zeros(x.size(0), 8)
        for t in range(x.size(1)):
            h = self.cell(x[:, t], h)
            unrolled += 1
        return self.head(h)


model = Unrolled()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(2, STEPS, 4)
loss = model(x).pow(2).mean()
loss.backward()
optimizer.step()
print(f"UNROLLED {unrolled}")
