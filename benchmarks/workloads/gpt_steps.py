"""A small nanoGPT-style model (causal attention masked with -inf, LayerNorm, GELU MLP,
AdamW) fed by a DataLoader: a typical step for the NaN hunt's cost. Run by nonfinite.py.

    python benchmarks/workloads/gpt_steps.py --steps N      # plain, N optimizer steps
"""

from __future__ import annotations

import argparse
import math

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

BLOCK, VOCAB, EMBD, HEADS, LAYERS = 64, 65, 128, 4, 4


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c_attn = nn.Linear(EMBD, 3 * EMBD)
        self.c_proj = nn.Linear(EMBD, EMBD)
        self.register_buffer("bias", torch.tril(torch.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        split = self.c_attn(x).split(EMBD, 2)
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in split)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // HEADS)
        att = F.softmax(att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf")), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(EMBD), Attention(), nn.LayerNorm(EMBD)
        self.mlp = nn.Sequential(nn.Linear(EMBD, 4 * EMBD), nn.GELU(), nn.Linear(4 * EMBD, EMBD))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, EMBD), nn.Embedding(BLOCK, EMBD)
        self.h = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f, self.lm_head = nn.LayerNorm(EMBD), nn.Linear(EMBD, VOCAB, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    args = parser.parse_args()
    torch.manual_seed(0)
    tokens = torch.randint(0, VOCAB, (4096, BLOCK + 1))
    loader = DataLoader(TensorDataset(tokens[:, :-1], tokens[:, 1:]), batch_size=8, shuffle=True)
    model = GPT()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = 0
    while step < args.steps:
        for x, y in loader:
            loss = F.cross_entropy(model(x).view(-1, VOCAB), y.reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            if step == args.steps:
                break


if __name__ == "__main__":
    main()
