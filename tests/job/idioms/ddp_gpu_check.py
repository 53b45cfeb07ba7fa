"""pytorch/examples distributed/minGPT-ddp's main.py, run under torchrun: it checks for two
GPUs before it trains (``torch.accelerator.device_count() >= 2``, else "Unable to locate
sufficient 2 gpus ... Exiting."), sets up the process group for its accelerator's backend,
trains a DDP model on a DistributedSampler, and rank 0 saves a snapshot."""

import os
import sys

import torch
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def verify_min_gpu_count(min_gpus: int = 2) -> bool:
    has_gpu = torch.accelerator.is_available()
    gpu_count = torch.accelerator.device_count()
    return has_gpu and gpu_count >= min_gpus


def ddp_setup():
    acc = torch.accelerator.current_accelerator()
    rank = int(os.environ["LOCAL_RANK"])
    device: torch.device = torch.device(f"{acc}:{rank}")
    backend = torch.distributed.get_default_backend_for_device(device)
    init_process_group(backend=backend)
    torch.accelerator.set_device_index(rank)


def main():
    ddp_setup()
    local_rank = int(os.environ["LOCAL_RANK"])
    dataset = TensorDataset(torch.randn(256, 8), torch.randn(256, 1))
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=16, pin_memory=True, sampler=sampler)
    model = torch.nn.Linear(8, 1).to(local_rank)
    model = DDP(model, device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for epoch in range(10):
        loader.sampler.set_epoch(epoch)
        for source, targets in loader:
            source, targets = source.to(local_rank), targets.to(local_rank)
            loss = torch.nn.functional.mse_loss(model(source), targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    if local_rank == 0:
        torch.save(model.module.state_dict(), "snapshot.pt")
    destroy_process_group()
    print(f"FINAL: rank {local_rank} trained")


if __name__ == "__main__":
    _min_gpu_count = 2
    if not verify_min_gpu_count(min_gpus=_min_gpu_count):
        print(f"Unable to locate sufficient {_min_gpu_count} gpus to run this example. Exiting.")
        sys.exit()
    main()
