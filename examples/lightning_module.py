"""A LightningModule and DataModule on synthetic data, trained with a plain Trainer.

Checkpoints go to ``checkpoints/`` and logs to ``lightning_logs/`` as in most
Lightning projects; ``quickdev run`` keeps both inside its run directory.
"""

from __future__ import annotations

import argparse

import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class SyntheticData(L.LightningDataModule):
    def __init__(self, batch_size: int = 32, num_workers: int = 2) -> None:
        super().__init__()
        self.batch_size = batch_size
        self.num_workers = num_workers

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(0)
        inputs = torch.randn(1536, 20, generator=generator)
        labels = (inputs[:, :10].sum(dim=1) > inputs[:, 10:].sum(dim=1)).long()
        self.train_set = TensorDataset(inputs[:1024], labels[:1024])
        self.val_set = TensorDataset(inputs[1024:1280], labels[1024:1280])
        self.test_set = TensorDataset(inputs[1280:], labels[1280:])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(
            self.train_set, batch_size=self.batch_size, shuffle=True, num_workers=self.num_workers
        )

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size, num_workers=self.num_workers)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.test_set, batch_size=self.batch_size, num_workers=self.num_workers)


class Classifier(L.LightningModule):
    def __init__(self, lr: float = 1e-3) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(
        self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int
    ) -> torch.Tensor:
        inputs, labels = batch
        loss = nn.functional.cross_entropy(self(inputs), labels)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        inputs, labels = batch
        self.log("val_loss", nn.functional.cross_entropy(self(inputs), labels))

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        inputs, labels = batch
        accuracy = (self(inputs).argmax(dim=1) == labels).float().mean()
        self.log("test_accuracy", accuracy)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--fast-dev-run", type=int, default=0, help="Lightning's own smoke test")
    args = parser.parse_args()

    L.seed_everything(0)
    trainer = L.Trainer(
        max_epochs=args.max_epochs,
        accelerator="auto",
        callbacks=[ModelCheckpoint(dirpath="checkpoints", monitor="val_loss")],
        log_every_n_steps=1,
        fast_dev_run=args.fast_dev_run,
    )
    data = SyntheticData(args.batch_size, args.num_workers)
    model = Classifier()
    trainer.fit(model, datamodule=data)
    trainer.test(model, datamodule=data)


if __name__ == "__main__":
    main()
