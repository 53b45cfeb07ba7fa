"""nanoGPT's loop in small: globals for configuration, hand-made batches from one token
tensor, ``estimate_loss()`` of ``eval_iters`` forwards per split, ``while True`` to
``max_iters``."""

import torch
from torch import nn
from torch.nn import functional as F

batch_size = 8
block_size = 16
max_iters = 5000
eval_interval = 500
eval_iters = 200
learning_rate = 1e-3

torch.manual_seed(0)
data = torch.randint(0, 64, (200_000,))
split = int(0.9 * len(data))
train_data, val_data = data[:split], data[split:]


def get_batch(which):
    source = train_data if which == "train" else val_data
    ix = torch.randint(len(source) - block_size, (batch_size,))
    x = torch.stack([source[i : i + block_size] for i in ix])
    y = torch.stack([source[i + 1 : i + 1 + block_size] for i in ix])
    return x, y


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(64, 32)
        self.block = nn.TransformerEncoderLayer(32, 2, 64, batch_first=True)
        self.head = nn.Linear(32, 64)

    def forward(self, idx, targets=None):
        logits = self.head(self.block(self.embed(idx)))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, 64), targets.view(-1))
        return logits, loss


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for which in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(which)
            _, loss = model(X, Y)
            losses[k] = loss.item()
        out[which] = losses.mean()
    model.train()
    return out


model = TinyGPT()
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
iter_num = 0
while True:
    if iter_num % eval_interval == 0:
        losses = estimate_loss()
        print(f"step {iter_num}: train {losses['train']:.4f}, val {losses['val']:.4f}")
    X, Y = get_batch("train")
    _, loss = model(X, Y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    iter_num += 1
    if iter_num > max_iters:
        break
