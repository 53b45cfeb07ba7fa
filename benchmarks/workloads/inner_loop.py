"""A training loop whose every step also runs a pure-Python inner loop of 1e6 iterations
(text cleaned character by character, as hand-written preprocessing does). The inner loop
calls a method, so the loop exits are in it too: what it costs is what the benchmark
measures. Prints the number of steps it took."""

import torch

torch.manual_seed(0)
model = torch.nn.Linear(64, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
text = "the quick brown fox jumps over the lazy dog " * 22_728  # ~1e6 characters
steps = 0
for _ in range(10_000):
    kept = []
    for ch in text[:1_000_000]:
        if ch.isalpha():
            kept.append(ord(ch))
    x = torch.tensor(kept[:512], dtype=torch.float32).view(8, 64) / 128
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    steps += 1
print(f"steps {steps}")
