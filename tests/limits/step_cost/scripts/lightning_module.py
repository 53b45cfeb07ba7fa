"""A LightningModule trained on batches of 512 and validated on batches of 1024."""

import sys

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 4))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        print(f"training on {x.shape[0]}", file=sys.stderr)
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        print(f"validating on {x.shape[0]}", file=sys.stderr)
        self.log("val_loss", nn.functional.cross_entropy(self(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())


data = TensorDataset(torch.randn(4096, 64), torch.randint(0, 4, (4096,)))
trainer = L.Trainer(max_epochs=5, logger=False, enable_checkpointing=False)
trainer.fit(
    Classifier(),
    DataLoader(data, batch_size=512, shuffle=True),
    DataLoader(data, batch_size=1024),
)
print("fitted", file=sys.stderr)
