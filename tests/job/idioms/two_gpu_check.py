"""A single-process script written for a two-GPU machine: it refuses to start on fewer
(``if torch.cuda.device_count() < 2: sys.exit(...)``), then keeps its model on the second
GPU and the loss on the first."""

import sys

import torch

if torch.cuda.device_count() < 2:
    sys.exit("this script needs 2 GPUs")
model = torch.nn.Linear(4, 1).to("cuda:1")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
dataset = torch.utils.data.TensorDataset(torch.randn(64, 4))
data = torch.utils.data.DataLoader(dataset, batch_size=8)
for _epoch in range(5):
    for (x,) in data:
        loss = model(x.to("cuda:1")).to("cuda:0").pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
torch.save(model.state_dict(), "two_gpus.pt")
print(f"FINAL: trained on {torch.cuda.device_count()} device(s) reported")
