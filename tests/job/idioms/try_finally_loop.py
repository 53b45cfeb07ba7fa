"""The training loop inside ``try/except Exception`` (logs and carries on), the last
checkpoint saved in ``finally``: only the final phase prints."""

import torch
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(640, 4), torch.randn(640, 1)), batch_size=8)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
epoch = -1
try:
    for epoch in range(500):
        for group in optimizer.param_groups:
            group["lr"] = 0.01 * 0.95**epoch
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
except Exception as exc:
    print(f"training failed: {exc}")
finally:
    torch.save({"model": model.state_dict(), "epoch": epoch}, "last.pt")
    print(f"FINAL: saved last.pt at epoch {epoch}")
