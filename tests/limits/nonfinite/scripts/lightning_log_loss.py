"""The log-of-zero loss in a LightningModule, trained by a plain Trainer for several epochs
with validation: the hunt must train past fast_dev_run's batches and find it."""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def smoothed_cross_entropy(logits, target, smoothing=0.1):
    log_probs = torch.log(torch.softmax(logits, dim=-1))
    weights = torch.full_like(log_probs, smoothing / (logits.shape[-1] - 1))
    weights.scatter_(1, target[:, None], 1.0 - smoothing)
    return -(weights * log_probs).sum(dim=-1).mean()


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3)
        )

    def training_step(self, batch, batch_idx):
        x, target = batch
        loss = smoothed_cross_entropy(self.net(x), target)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, target = batch
        self.log("val_loss", nn.functional.cross_entropy(self.net(x), target))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.4, momentum=0.9)


def loaders():
    g = torch.Generator().manual_seed(0)
    centers = torch.tensor([[-4.0, 0.0], [4.0, 0.0], [0.0, 6.0]])
    target = torch.randint(0, 3, (600,), generator=g)
    x = centers[target] + 0.5 * torch.randn(600, 2, generator=g)
    train = DataLoader(TensorDataset(x[:500], target[:500]), batch_size=20, shuffle=True)
    return train, DataLoader(TensorDataset(x[500:], target[500:]), batch_size=50)


if __name__ == "__main__":
    L.seed_everything(0)
    train, val = loaders()
    trainer = L.Trainer(max_epochs=10, enable_progress_bar=False, enable_checkpointing=False)
    trainer.fit(Classifier(), train, val)
