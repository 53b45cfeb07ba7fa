"""A script for a 16-GPU machine: it checks, and exits (status 0) before it trains when the
devices are not there. More than the stand-in gives: it exits, and trained nothing."""

import sys

import torch

if torch.cuda.device_count() < 16:
    print("Unable to locate sufficient 16 gpus to run this example. Exiting.")
    sys.exit()
model = torch.nn.Linear(4, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _step in range(100):
    loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
