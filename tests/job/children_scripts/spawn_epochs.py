"""The DDP tutorial's multigpu.py launch with the training written out in the worker
function, as many copies of it do: ``mp.spawn(main, …)`` starts the ranks, each builds a
new DataLoader every epoch and, after its epochs, saves its model. Synthetic data, gloo;
the address is chosen by the parent. ``--start-method forkserver``: the same ranks through
``torch.multiprocessing.start_processes``."""

import argparse
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main(rank, world_size, epochs):
    dist.init_process_group(backend="gloo", rank=rank, world_size=world_size)
    data = TensorDataset(torch.randn(512, 20), torch.randint(0, 4, (512,)))
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    trained = 0
    for epoch in range(epochs):
        sampler = DistributedSampler(data)
        sampler.set_epoch(epoch)
        loader = DataLoader(data, batch_size=16, sampler=sampler)
        for source, targets in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(source), targets).backward()
            optimizer.step()
        trained += 1
        print(f"[rank{rank}] epoch {epoch} done", flush=True)
    torch.save(model.state_dict(), f"model_rank{rank}.pt")
    print(f"[rank{rank}] saved after {trained} epoch(s)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("epochs", type=int)
    parser.add_argument("--world_size", default=2, type=int)
    parser.add_argument("--start-method", default="spawn", choices=["spawn", "forkserver"])
    args = parser.parse_args()
    print("launching the ranks", flush=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(s.getsockname()[1])
    launch = (args.world_size, args.epochs)
    if args.start_method == "spawn":
        mp.spawn(main, args=launch, nprocs=args.world_size)
    else:
        mp.start_processes(main, args=launch, nprocs=args.world_size, start_method="forkserver")
    print("all ranks done", flush=True)
