"""A script from a multi-GPU machine, run unmodified: the model on "cuda", a buffer on
"cuda:3", a checkpoint saved there on cuda:1 restored where it was saved (path in argv[1]),
autocast float16 with a GradScaler, a final checkpoint."""

import sys

import torch
from torch import nn
from torch.nn import functional as F

device = "cuda"
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)).to(device)
spare = torch.zeros(8, device="cuda:3")
state = torch.load(sys.argv[1])
model[0].load_state_dict(state["layer"])
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cuda")
for _ in range(100):
    x = torch.randn(16, 32, device=device)
    y = torch.randint(0, 4, (16,), device=device)
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        out = model(x)
        loss = F.cross_entropy(out, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
print("DEVICES", next(model.parameters()).device, spare.device, state["layer"]["weight"].device)
print("DTYPES", out.dtype, loss.dtype)
torch.save(model.state_dict(), "final.pt")
