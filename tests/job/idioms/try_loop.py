"""A canonical script whose training loop sits in a top-level ``try:`` (stopped by Ctrl+C);
the epoch count is written into the code."""

import torch
from torch.utils.data import DataLoader, TensorDataset

train_loader = DataLoader(TensorDataset(torch.randn(640, 4), torch.randn(640, 1)), batch_size=8)
val_loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

try:
    for epoch in range(100):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val = sum(torch.nn.functional.mse_loss(model(x), y).item() for x, y in val_loader)
        print(f"epoch {epoch}: val {val:.3f}")
except KeyboardInterrupt:
    print("interrupted")
