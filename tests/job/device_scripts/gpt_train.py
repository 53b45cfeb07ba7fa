# ruff: noqa: E501, SIM115 - kept in the style of the public script it copies
"""A GPT-style training script: module-level config, a configurator, get_batch that
pins memory and copies to the GPU without blocking, autocast from a dtype string."""

import math
from contextlib import nullcontext

import torch
import torch.nn as nn
from torch.nn import functional as F

batch_size = 8
block_size = 32
n_embd = 64
vocab_size = 65
max_iters = 5000
learning_rate = 6e-4
device = "cuda"  # examples: 'cpu', 'cuda', 'cuda:0', 'cuda:1' etc.
dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
compile = True
config_keys = [
    k
    for k, v in globals().items()
    if not k.startswith("_") and isinstance(v, (int, float, bool, str))
]
exec(open("configurator.py").read())  # overrides from command line or config file
config = {k: globals()[k] for k in config_keys}

torch.manual_seed(1337)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = (
    nullcontext()
    if device_type == "cpu"
    else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
)

data = torch.randint(vocab_size, (10_000,), dtype=torch.int64)


def get_batch():
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix])
    if device_type == "cuda":
        x, y = (
            x.pin_memory().to(device, non_blocking=True),
            y.pin_memory().to(device, non_blocking=True),
        )
    else:
        x, y = x.to(device), y.to(device)
    return x, y


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(n_embd)
        self.attn = nn.MultiheadAttention(n_embd, 4, batch_first=True)
        self.mlp = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd)
        )

    def forward(self, x):
        mask = torch.triu(torch.ones(x.size(1), x.size(1), device=x.device, dtype=torch.bool), 1)
        h = self.ln(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.block = Block()
        self.head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets=None):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        logits = self.head(self.block(self.wte(idx) + self.wpe(pos)))
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


model = GPT().to(device)
scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, fused=device_type == "cuda")
if compile:
    model = torch.compile(model)

X, Y = get_batch()
for iter_num in range(max_iters):
    lr = learning_rate * 0.5 * (1 + math.cos(math.pi * iter_num / max_iters))
    for group in optimizer.param_groups:
        group["lr"] = lr
    with ctx:
        logits, loss = model(X, Y)
    X, Y = get_batch()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print(
        f"iter {iter_num}: loss {loss.item():.4f}, mem {torch.cuda.max_memory_allocated() / 1e6:.1f} MB"
    )
