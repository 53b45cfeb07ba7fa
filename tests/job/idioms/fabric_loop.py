"""A Lightning Fabric loop written for a GPU: 10 epochs, a TensorBoard logger, fabric.save."""

import torch
from lightning.fabric import Fabric
from lightning.fabric.loggers import TensorBoardLogger
from torch.utils.data import DataLoader, TensorDataset

fabric = Fabric(accelerator="cuda", devices=1, loggers=TensorBoardLogger(root_dir="logs"))
fabric.launch()
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
model, optimizer = fabric.setup(model, optimizer)
loader = fabric.setup_dataloaders(
    DataLoader(TensorDataset(torch.randn(256, 8), torch.randn(256, 1)), batch_size=8)
)
for epoch in range(10):
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        fabric.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        fabric.log("loss", loss.item(), step=step)
    fabric.save("checkpoints/last.ckpt", {"model": model, "optimizer": optimizer, "epoch": epoch})
