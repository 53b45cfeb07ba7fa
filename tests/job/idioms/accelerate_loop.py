"""An accelerate training loop: prepared model, optimizer and loaders, 5 epochs, an
evaluation pass each epoch with its predictions gathered for the metric
(``gather_for_metrics``), the state and the model saved at the end."""

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

accelerator = Accelerator()
train_loader = DataLoader(
    TensorDataset(torch.randn(512, 8), torch.randn(512, 1)),
    batch_size=16,
    shuffle=True,
    num_workers=4,
)
eval_loader = DataLoader(TensorDataset(torch.randn(128, 8), torch.randn(128, 1)), batch_size=16)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, optimizer, train_loader, eval_loader = accelerator.prepare(
    model, optimizer, train_loader, eval_loader
)
for epoch in range(5):
    model.train()
    for x, y in train_loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    errors = []
    for x, y in eval_loader:
        with torch.no_grad():
            predictions = model(x)
        predictions, targets = accelerator.gather_for_metrics((predictions, y))
        errors.append((predictions - targets).pow(2))
    accelerator.print(f"epoch {epoch}: eval {torch.cat(errors).mean():.3f}")
accelerator.save_state("checkpoints/state")
accelerator.save_model(model, "checkpoints/model")
accelerator.print(f"FINAL: {len(errors)} eval batches gathered, state and model saved")
