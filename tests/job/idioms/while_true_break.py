"""``while True`` with the script's own ``break`` at a step count nobody reaches in a quick run,
then an evaluation of the trained model: only the final phase prints."""

import torch

torch.manual_seed(0)
features = torch.randn(4096, 8)
targets = (features[:, 0] > 0).long()
model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
max_steps = 20_000
step = 0
while True:
    idx = torch.randint(0, len(features), (64,))
    loss = torch.nn.functional.cross_entropy(model(features[idx]), targets[idx])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    step += 1
    if step >= max_steps:
        break

model.eval()
with torch.no_grad():
    accuracy = (model(features).argmax(1) == targets).float().mean().item()
print(f"FINAL: accuracy {accuracy:.2f} after {step} steps")
