"""A project's own trainer in a sibling module (``project_lib/trainer.py``): ``fit()`` loops
forever over its loader; the script then tests and exports. Only the final phase prints."""

import torch
from project_lib.trainer import Trainer
from torch.utils.data import DataLoader, TensorDataset

x = torch.randn(1024, 6)
data = TensorDataset(x, x.sum(1, keepdim=True))
model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
trainer = Trainer(model, DataLoader(data, batch_size=32, shuffle=True), lr=1e-2)
trainer.fit()
test_loss = trainer.test(DataLoader(data, batch_size=256))
torch.save(model, "exported_model.pt")
print(f"FINAL: {trainer.steps} steps, test loss {test_loss:.3f}, exported")
