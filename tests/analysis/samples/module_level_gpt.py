# ruff: noqa: SIM115, RUF059, B007 - kept in the style of the public script it copies
"""A character model trained at module level, configured by globals a config file overrides
(the layout of nanoGPT's train.py): no main(), no main guard, the model built in an
if/elif chain with a loop of its own, then an endless training loop with micro steps."""

import os
import time
from contextlib import nullcontext

import torch
from torch import nn

out_dir = "out"
eval_interval = 250
eval_iters = 200
init_from = "scratch"  # or "resume"
batch_size = 12
block_size = 64
gradient_accumulation_steps = 4
learning_rate = 6e-4
max_iters = 5000
device = "cuda"
dtype = "float16"
compile = True
exec(open("configurator.py").read())  # overrides from the command line or a config file

device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type, dtype=ptdtype)


def get_batch(split):
    data = torch.randint(65, (10_000,))
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix])
    return x.to(device), y.to(device)


class TinyLM(nn.Module):
    def __init__(self, vocab=65, width=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx, targets=None):
        logits = self.head(self.embed(idx))
        loss = None
        if targets is not None:
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


iter_num = 0
model_args = dict(vocab=65, width=32)
if init_from == "scratch":
    print("Initializing a new model from scratch")
    model = TinyLM(**model_args)
elif init_from == "resume":
    checkpoint = torch.load(os.path.join(out_dir, "ckpt.pt"), map_location=device)
    for k in ["vocab", "width"]:
        model_args[k] = checkpoint["model_args"][k]
    model = TinyLM(**model_args)
    iter_num = checkpoint["iter_num"]
model.to(device)
scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
if compile:
    print("compiling the model... (takes a ~minute)")
    model = torch.compile(model)


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            with ctx:
                logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


X, Y = get_batch("train")
t0 = time.time()
while True:
    if iter_num % eval_interval == 0:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")

    for micro_step in range(gradient_accumulation_steps):
        with ctx:  # TRAINING STEP
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
        X, Y = get_batch("train")
        scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)

    iter_num += 1
    if iter_num > max_iters:
        break
