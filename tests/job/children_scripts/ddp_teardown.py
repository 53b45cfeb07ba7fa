"""A DDP trainer's end, several times over: a step, then at once ``destroy_process_group``
(as a rank does when a budget ends its epoch loop right after its last step). Each time
the group is made anew on a fresh address."""

import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, ports):
    for port in ports:
        address = f"tcp://127.0.0.1:{port}"
        dist.init_process_group("nccl", init_method=address, rank=rank, world_size=2)
        model = DDP(nn.Linear(8, 2).to(rank), device_ids=[rank])
        model(torch.randn(4, 8, device=rank)).sum().backward()
        dist.destroy_process_group()
        del model
    print(f"rank {rank}: {len(ports)} rounds", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    rounds = int(sys.argv[1])
    mp.spawn(worker, args=([free_port() for _ in range(rounds)],), nprocs=2)
