# A mixed-precision step as a GPU script writes it, on the CPU: the GradScaler's first scale
# overflows the gradients, so it skips the optimizer's step (and lowers its scale), as a
# float16 run's first steps can. The script trained; its first updates were skipped.
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**127)
for x in torch.utils.data.DataLoader(torch.ones(64, 4) * 100, batch_size=8):
    loss = ((model(x) - 1) ** 2).mean()
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)  # SCALER STEP
    scaler.update()
print("scale now", scaler.get_scale())
