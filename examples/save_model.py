"""Trains a small classifier and saves ``model.pt`` (and a full checkpoint), then reloads it.

Under ``quickdev run`` the files land in the run directory; an existing
``model.pt`` next to the script's working directory is left untouched.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_data(samples: int = 512) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(samples, 16, generator=generator)
    labels = (inputs.sum(dim=1) > 0).long()
    return TensorDataset(inputs, labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--out", default="model.pt")
    parser.add_argument("--checkpoint-dir", default="checkpoints")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(make_data(), batch_size=args.batch_size, shuffle=True)

    for epoch in range(args.epochs):
        for inputs, labels in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(inputs), labels)
            loss.backward()
            optimizer.step()
        checkpoint = Path(args.checkpoint_dir) / f"epoch-{epoch}.pt"
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"epoch": epoch, "model": model.state_dict()}, checkpoint)
        print(f"epoch {epoch}: loss {loss.item():.4f}")

    torch.save(model.state_dict(), args.out)
    restored = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
    restored.load_state_dict(torch.load(args.out, weights_only=True))
    print(f"saved and reloaded {args.out}")


if __name__ == "__main__":
    main()
