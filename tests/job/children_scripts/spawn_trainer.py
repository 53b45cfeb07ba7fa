"""The DDP tutorial's multigpu.py shape: ``mp.spawn`` starts one process per GPU, each
joins an NCCL process group, wraps its model in DDP on its GPU and trains over a
DistributedSampler. Synthetic data; the address is chosen by the parent."""

import argparse
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def ddp_setup(rank, world_size):
    dist.init_process_group(backend="nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)


class Trainer:
    def __init__(self, model, loader, optimizer, gpu_id):
        self.gpu_id = gpu_id
        self.model = DDP(model.to(gpu_id), device_ids=[gpu_id])
        self.loader = loader
        self.optimizer = optimizer

    def _run_epoch(self, epoch):
        self.loader.sampler.set_epoch(epoch)
        for source, targets in self.loader:
            source, targets = source.to(self.gpu_id), targets.to(self.gpu_id)
            self.optimizer.zero_grad()
            loss = F.cross_entropy(self.model(source), targets)
            loss.backward()
            self.optimizer.step()
            print(f"[GPU{self.gpu_id}] Epoch {epoch} | loss {loss.item():.4f}", flush=True)

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            self._run_epoch(epoch)


def main(rank, world_size, total_epochs, batch_size):
    ddp_setup(rank, world_size)
    data = TensorDataset(torch.randn(2048, 20), torch.randint(0, 4, (2048,)))
    loader = DataLoader(data, batch_size=batch_size, sampler=DistributedSampler(data))
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
    trainer = Trainer(model, loader, torch.optim.SGD(model.parameters(), lr=1e-2), rank)
    trainer.train(total_epochs)
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("total_epochs", type=int)
    parser.add_argument("--batch_size", default=32, type=int)
    parser.add_argument("--world_size", default=torch.cuda.device_count(), type=int)
    args = parser.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(s.getsockname()[1])
    mp.spawn(
        main, args=(args.world_size, args.total_epochs, args.batch_size), nprocs=args.world_size
    )
    print("all ranks done", flush=True)
