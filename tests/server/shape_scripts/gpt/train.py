# ruff: noqa: RUF059 - kept in the style of the public code it follows
"""A GPT training script in the single-file style: configuration as module globals, batches
cut from one token tensor, ``estimate_loss`` over both splits under no_grad, a ``while True``
loop that evaluates every ``eval_interval`` iterations. Synthetic tokens stand in for the
memory-mapped dataset."""

import time

import torch
from model import GPT, GPTConfig

batch_size = 4
block_size = 16
n_layer = 2
n_head = 4
n_embd = 32
dropout = 0.0
learning_rate = 1e-3
max_iters = 2000
eval_interval = 250
eval_iters = 200
device = "cpu"

torch.manual_seed(1337)
train_data = torch.randint(0, 65, (20_000,), dtype=torch.int64)
val_data = torch.randint(0, 65, (2_000,), dtype=torch.int64)


def get_batch(split):
    data = train_data if split == "train" else val_data
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix])
    x, y = x.to(device), y.to(device)
    return x, y


model_args = dict(
    n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=block_size, dropout=dropout
)
model = GPT(GPTConfig(**model_args)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


X, Y = get_batch("train")
t0 = time.time()
iter_num = 0
while True:
    if iter_num % eval_interval == 0:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
    logits, loss = model(X, Y)
    X, Y = get_batch("train")
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1
    if iter_num > max_iters:
        break
