"""Mixed precision as the AMP recipe writes it: torch.autocast("cuda", float16) and a
GradScaler, on a model moved with .cuda(), with CUDA timing events around the step."""

import torch
from torch import nn

model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cuda")
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for step in range(1000):
    x = torch.randn(16, 32, device="cuda")
    y = torch.randint(0, 4, (16,), device="cuda")
    start.record()
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    end.record()
    torch.cuda.synchronize()
    print(f"step {step}: {start.elapsed_time(end):.2f} ms, out {out.dtype}")
