"""An endless trainer: re-iterates its loader forever; a sampler of 1e10 samples, 4 workers.

A small copy of the hand-written trainers that stop only at a --max-iters nobody passes.
"""

import argparse

import torch
from torch.utils.data import DataLoader, RandomSampler, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--max-iters", type=int, default=None)
parser.add_argument("--batch-size", type=int, default=16)
args = parser.parse_args()

dataset = TensorDataset(torch.randn(256, 8), torch.randn(256, 1))
sampler = RandomSampler(dataset, replacement=True, num_samples=int(1e10))
loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=4)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

step = 0
it = iter(loader)
while True:
    try:
        x, y = next(it)
    except StopIteration:
        it = iter(loader)
        continue
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    step += 1
    if args.max_iters and step >= args.max_iters:
        break
print(f"trained {step} steps")
