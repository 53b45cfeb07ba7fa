"""A custom training step with autocast and gradient scaling, written for a CUDA machine.

Hard-codes CUDA (``.cuda()``, ``.to("cuda")``), compiles the model, pins memory and
uses persistent workers, as GPU training scripts do. ``quickdev run`` runs it on a
CPU-only laptop: CUDA calls land on the CPU, torch.compile is off, no workers.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class NoisyPatterns(Dataset[dict[str, torch.Tensor]]):
    def __init__(self, size: int = 1024, features: int = 48, classes: int = 4) -> None:
        generator = torch.Generator().manual_seed(0)
        self.centers = torch.randn(classes, features, generator=generator)
        self.labels = torch.randint(classes, (size,), generator=generator)
        self.noise = 0.5 * torch.randn(size, features, generator=generator)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        label = self.labels[index]
        return {"features": self.centers[label] + self.noise[index], "label": label}


class Net(nn.Module):
    def __init__(self, features: int = 48, classes: int = 4) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(features, 128), nn.GELU(), nn.LayerNorm(128), nn.Linear(128, classes)
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.body(features)


def train_step(
    model: nn.Module,
    batch: dict[str, torch.Tensor],
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    loss_fn: nn.Module,
) -> float:
    features = batch["features"].to("cuda", non_blocking=True)
    labels = batch["label"].cuda(non_blocking=True)
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        loss = loss_fn(model(features), labels)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--num-workers", type=int, default=4)
    parser.add_argument("--resume", help="a checkpoint saved by a GPU run")
    args = parser.parse_args()

    loader = DataLoader(
        NoisyPatterns(),
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.num_workers,
        pin_memory=True,
        persistent_workers=args.num_workers > 0,
    )
    model = Net().cuda()
    if args.resume:
        model.load_state_dict(torch.load(args.resume)["model"])
    model = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    loss_fn = nn.CrossEntropyLoss().cuda()

    for epoch in range(args.epochs):
        model.train()
        for batch in loader:
            loss = train_step(model, batch, optimizer, scaler, loss_fn)
        print(f"epoch {epoch}: loss {loss:.4f}, {len(loader)} batches")


if __name__ == "__main__":
    main()
