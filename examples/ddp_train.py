"""Data-parallel training with DistributedDataParallel on CPU (gloo), synthetic data.

Under torchrun every process trains on its own shard and gradients are averaged:

    torchrun --nproc-per-node 2 examples/ddp_train.py
    quickdev run --nproc 2 examples/ddp_train.py        # a few batches per rank

Run without torchrun it trains alone, as a world of one process.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def synthetic_classification(size: int, features: int, classes: int, seed: int) -> TensorDataset:
    """Points around one random centre per class, the same on every rank."""
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(classes, features, generator=torch.Generator().manual_seed(7)) * 1.5
    labels = torch.randint(classes, (size,), generator=generator)
    inputs = centres[labels] + torch.randn(size, features, generator=generator)
    return TensorDataset(inputs, labels)


class Classifier(nn.Module):
    def __init__(self, features: int, classes: int, hidden: int = 64) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.body(x)))


def init_distributed() -> tuple[int, int]:
    if "RANK" not in os.environ:  # plain `python ddp_train.py`: a world of one
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29512")
    dist.init_process_group(backend="gloo")
    return dist.get_rank(), dist.get_world_size()


def train_one_epoch(
    model: nn.Module, data: DataLoader, optimizer: torch.optim.Optimizer, epoch: int
) -> float:
    model.train()
    assert isinstance(data.sampler, DistributedSampler)
    data.sampler.set_epoch(epoch)  # a different shuffle each epoch, the same on all ranks
    loss_fn = nn.CrossEntropyLoss()
    total = 0.0
    for inputs, labels in data:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), labels)
        loss.backward()  # DDP averages the gradients across ranks here
        optimizer.step()
        total += loss.item()
    return total / max(len(data), 1)


@torch.no_grad()
def accuracy(model: nn.Module, data: DataLoader) -> float:
    model.eval()
    correct = torch.zeros(2)
    for inputs, labels in data:
        correct += torch.tensor([(model(inputs).argmax(1) == labels).sum().item(), len(labels)])
    dist.all_reduce(correct)  # every rank saw a different shard
    return float(correct[0] / correct[1].clamp(min=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    rank, world = init_distributed()
    torch.manual_seed(0)  # the same initial weights everywhere; DDP also broadcasts them
    features, classes = 16, 4
    train_set, val_set, test_set = (
        synthetic_classification(size, features, classes, seed)
        for size, seed in [(4096, 0), (1024, 1), (1024, 2)]
    )
    # Each rank sees its own shard of every split.
    train = DataLoader(train_set, args.batch_size, sampler=DistributedSampler(train_set, seed=0))
    val = DataLoader(val_set, args.batch_size, sampler=DistributedSampler(val_set, shuffle=False))
    test = DataLoader(
        test_set, args.batch_size, sampler=DistributedSampler(test_set, shuffle=False)
    )

    model = DistributedDataParallel(Classifier(features, classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(args.epochs):
        train_loss = train_one_epoch(model, train, optimizer, epoch)
        val_accuracy = accuracy(model, val)
        if rank == 0:
            print(f"epoch {epoch}: train loss {train_loss:.4f}, val accuracy {val_accuracy:.3f}")
    test_accuracy = accuracy(model, test)
    if rank == 0:
        print(f"test accuracy {test_accuracy:.3f} ({world} ranks)")
    # Free DDP's reducer and let in-flight collectives finish before the process group
    # goes away: destroying a gloo group from a finaliser can deadlock on the GIL.
    del model, optimizer
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
