"""A plain PyTorch train/val/test loop on a synthetic regression task.

Runs on its own (``python examples/train_loop.py``) for the full epochs, or for a
couple of batches under ``quickdev run examples/train_loop.py``.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SyntheticRegression(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Noisy samples of a fixed random linear map, generated from a seed."""

    def __init__(self, size: int, features: int = 32, seed: int = 0) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.inputs = torch.randn(size, features, generator=generator)
        weights = torch.randn(features, 1, generator=torch.Generator().manual_seed(1234))
        noise = 0.1 * torch.randn(size, 1, generator=generator)
        self.targets = self.inputs @ weights + noise

    def __len__(self) -> int:
        return len(self.inputs)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.inputs[index], self.targets[index]


class MLP(nn.Module):
    def __init__(self, features: int = 32, hidden: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def train_one_epoch(
    model: nn.Module,
    loader: DataLoader,
    optimizer: torch.optim.Optimizer,
    device: torch.device,
    limit_batches: int = 0,
) -> float:
    model.train()
    loss_fn = nn.MSELoss()
    total, seen = 0.0, 0
    for inputs, targets in loader:
        if limit_batches and seen >= limit_batches:
            break
        seen += 1
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / max(seen, 1)


@torch.no_grad()
def evaluate(
    model: nn.Module, loader: DataLoader, device: torch.device, limit_batches: int = 0
) -> float:
    model.eval()
    loss_fn = nn.MSELoss()
    total, seen = 0.0, 0
    for inputs, targets in loader:
        if limit_batches and seen >= limit_batches:
            break
        seen += 1
        inputs, targets = inputs.to(device), targets.to(device)
        total += loss_fn(model(inputs), targets).item()
    return total / max(seen, 1)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument(
        "--limit-batches",
        type=int,
        default=0,
        help="stop each pass after this many batches (0: all); a hand-made smoke test",
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    train_loader = DataLoader(
        SyntheticRegression(2048, seed=0),
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.num_workers,
    )
    val_loader = DataLoader(
        SyntheticRegression(512, seed=1), batch_size=args.batch_size, num_workers=args.num_workers
    )
    test_loader = DataLoader(
        SyntheticRegression(512, seed=2), batch_size=args.batch_size, num_workers=args.num_workers
    )
    model = MLP().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        train_loss = train_one_epoch(model, train_loader, optimizer, device, args.limit_batches)
        val_loss = evaluate(model, val_loader, device, args.limit_batches)
        print(f"epoch {epoch}: train loss {train_loss:.4f}, val loss {val_loss:.4f}")
    print(f"test loss {evaluate(model, test_loader, device, args.limit_batches):.4f}")


if __name__ == "__main__":
    main()
