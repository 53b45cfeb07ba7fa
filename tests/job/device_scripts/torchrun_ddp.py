"""The torchrun tutorial: NCCL, set_device(LOCAL_RANK), DDP(device_ids=[gpu_id]),
a DistributedSampler, and a device string built from LOCAL_RANK."""

import os

import torch
import torch.nn.functional as F
from torch.distributed import barrier, destroy_process_group, get_rank, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def ddp_setup():
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    init_process_group(backend="nccl")


ddp_setup()
gpu_id = int(os.environ["LOCAL_RANK"])
device = torch.device(f"cuda:{gpu_id}")
dataset = TensorDataset(torch.rand(512, 20), torch.rand(512, 1))
loader = DataLoader(dataset, batch_size=32, pin_memory=True, sampler=DistributedSampler(dataset))
model = DDP(torch.nn.Linear(20, 1).to(gpu_id), device_ids=[gpu_id], output_device=gpu_id)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
for epoch in range(100):
    loader.sampler.set_epoch(epoch)
    for source, targets in loader:
        source, targets = source.to(device), targets.to(device)
        optimizer.zero_grad()
        F.mse_loss(model(source), targets).backward()
        optimizer.step()
    barrier(device_ids=[gpu_id])
    print(f"[GPU{get_rank()}] epoch {epoch} done on {next(model.parameters()).device}")
destroy_process_group()
