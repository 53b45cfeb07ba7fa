"""Two endless idioms in turn: lucidrains' ``cycle(dl)`` generator (``while True: for data
in dl: yield data``) under ``while step < train_num_steps`` with gradient accumulation, then
``itertools.cycle(loader)`` under a loop of 100,000 steps. Each phase prints once its loop
ended. The generator's loops hold a call, so the job rewrites them too: ending them would
end the generator, and the consumer's ``next(dl)`` would raise StopIteration."""

import itertools

import torch
from torch.utils.data import DataLoader, TensorDataset


def cycle(dl):
    while True:
        for data in dl:
            yield tuple(data)


data = TensorDataset(torch.randn(256, 4), torch.randn(256, 1))
model = torch.nn.Linear(4, 1)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

dl = cycle(DataLoader(data, batch_size=16, shuffle=True, num_workers=2))
step, train_num_steps, gradient_accumulate_every = 0, 700_000, 2
while step < train_num_steps:
    for _ in range(gradient_accumulate_every):
        x, y = next(dl)
        (torch.nn.functional.mse_loss(model(x), y) / gradient_accumulate_every).backward()
    opt.step()
    opt.zero_grad()
    step += 1
print(f"PHASE 1: {step} steps")

batches = itertools.cycle(DataLoader(data, batch_size=16))
finetuned = 0
for _ in range(100_000):
    x, y = next(batches)
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    opt.zero_grad()
    finetuned += 1
torch.save(model.state_dict(), "model.pt")
print(f"FINAL: {step} + {finetuned} steps, saved")
