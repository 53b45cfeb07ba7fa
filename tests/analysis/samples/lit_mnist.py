"""A Lightning module trained with Trainer.fit inside main()."""

import argparse

import lightning as L
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset


class RandomImages(Dataset):
    def __init__(self, n: int) -> None:
        self.x = torch.randn(n, 1, 28, 28)
        self.y = torch.randint(0, 10, (n,))

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Backbone(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1 = nn.Linear(28 * 28, 10)

    def forward(self, x):
        return self.l1(x.flatten(1))


class BaseLit(L.LightningModule):
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class LitClassifier(BaseLit):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = Backbone()

    def forward(self, x):
        return self.backbone(x)

    def training_step(self, batch, batch_idx):
        """One optimisation step."""
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y))

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_loss", F.cross_entropy(self(x), y))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max_epochs", type=int, default=20)
    parser.add_argument("--batch-size", "-b", type=int, default=128)
    parser.add_argument("--num-workers", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()
    loader = DataLoader(RandomImages(512), batch_size=args.batch_size, num_workers=args.num_workers)
    trainer = L.Trainer(max_epochs=args.max_epochs)
    trainer.fit(LitClassifier(), loader, loader)
    trainer.test(LitClassifier(), loader)


if __name__ == "__main__":
    main()
