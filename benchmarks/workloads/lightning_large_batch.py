"""A LightningModule with a large batch: a small convolutional classifier of 96x96 images,
trained and validated on batches of 1024 (synthetic data, generated per sample)."""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __len__(self) -> int:
        return 20_000

    def __getitem__(self, index: int):
        generator = torch.Generator().manual_seed(index)
        return torch.rand(3, 96, 96, generator=generator), index % 10


class Classifier(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1),
            nn.BatchNorm2d(128),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.Linear(128 * 12 * 12, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", nn.functional.cross_entropy(logits, y))
        self.log("val_acc", (logits.argmax(1) == y).float().mean())

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    trainer = L.Trainer(max_epochs=10, accelerator="auto", logger=False)
    trainer.fit(
        Classifier(),
        DataLoader(Images(), batch_size=1024, shuffle=True, num_workers=4),
        DataLoader(Images(), batch_size=1024, num_workers=4),
    )
