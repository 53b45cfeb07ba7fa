"""nanoGPT's shape: ``while iter_num < max_iters`` over hand-made batches, an
``estimate_loss()`` of ``eval_iters`` = 200 forwards per split every ``eval_interval``
iterations, a checkpoint when validation improves; the final phase reports and saves."""

import torch
from torch import nn
from torch.nn import functional as F

max_iters = 5000
eval_interval = 250
eval_iters = 200
block_size, batch_size, vocab = 16, 8, 64

torch.manual_seed(0)
data = torch.randint(0, vocab, (50_000,))
train_data, val_data = data[:45_000], data[45_000:]


def get_batch(split):
    source = train_data if split == "train" else val_data
    ix = torch.randint(len(source) - block_size - 1, (batch_size,))
    x = torch.stack([source[i : i + block_size] for i in ix])
    y = torch.stack([source[i + 1 : i + 1 + block_size] for i in ix])
    return x, y


class Bigram(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(vocab, vocab)

    def forward(self, idx, targets=None):
        logits = self.table(idx)
        loss = (
            None if targets is None else F.cross_entropy(logits.view(-1, vocab), targets.view(-1))
        )
        return logits, loss


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            _, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


model = Bigram()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
best_val_loss = float("inf")
iter_num = 0
while iter_num < max_iters:
    if iter_num % eval_interval == 0:
        losses = estimate_loss()
        if losses["val"] < best_val_loss:
            best_val_loss = losses["val"]
    X, Y = get_batch("train")
    _, loss = model(X, Y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    iter_num += 1

losses = estimate_loss()
torch.save({"model": model.state_dict(), "iter_num": iter_num}, "ckpt.pt")
print(f"FINAL: iter {iter_num}, val loss {losses['val']:.4f}, best {best_val_loss:.4f}")
