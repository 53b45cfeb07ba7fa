"""A GPT training script in nanoGPT's style, written for a CUDA machine: by default
nanoGPT's Shakespeare character model (6 layers, 6 heads, 384 wide, 256 tokens, batch
64), bfloat16 autocast, AdamW, gradient clipping. Random tokens stand in for the dataset.
GPT-2 124M is ``--n-layer 12 --n-head 12 --n-embd 768 --vocab-size 50304 --block-size
1024 --batch-size 12``.

The memory forecast's examples (docs/forecast.md) come from it:
``quickdev run --memory-forecast examples/gpt_memory.py``. Every option is the
configuration's (``--batch-size 128``, ``--float32``, ``--checkpoint``), so a forecast's
advice can be tried by running the script again with it.
"""

from __future__ import annotations

import argparse
import contextlib
import math

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint


class CausalSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"), nn.Linear(4 * width, width)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.checkpointed = args.checkpoint
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(args.vocab_size, args.n_embd),
                wpe=nn.Embedding(args.block_size, args.n_embd),
                h=nn.ModuleList(Block(args.n_embd, args.n_head) for _ in range(args.n_layer)),
                ln_f=nn.LayerNorm(args.n_embd),
            )
        )
        self.lm_head = nn.Linear(args.n_embd, args.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * args.n_layer))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = checkpoint(block, x, use_reentrant=False) if self.checkpointed else block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-layer", type=int, default=6)
    parser.add_argument("--n-head", type=int, default=6)
    parser.add_argument("--n-embd", type=int, default=384)
    parser.add_argument("--vocab-size", type=int, default=65)
    parser.add_argument("--block-size", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-iters", type=int, default=5000)
    parser.add_argument("--float32", action="store_true", help="no bfloat16 autocast")
    parser.add_argument("--checkpoint", action="store_true", help="checkpoint each block")
    args = parser.parse_args()

    torch.manual_seed(1337)
    device = "cuda"
    model = GPT(args).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
    autocast = (
        contextlib.nullcontext()
        if args.float32
        else torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    )
    for _ in range(args.max_iters):
        x = torch.randint(args.vocab_size, (args.batch_size, args.block_size), device=device)
        y = torch.roll(x, -1, dims=1)
        with autocast:
            loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


if __name__ == "__main__":
    main()
