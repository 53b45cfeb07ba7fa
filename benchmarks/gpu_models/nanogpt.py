"""nanoGPT's train.py and model.py, cut to one training loop on synthetic tokens.

Two of its configurations: ``shakespeare_char`` (6 layers of 384, batch 64 x 256 tokens,
dropout 0.2, 65 characters) and ``gpt2`` (train.py's defaults: GPT-2 124M, batch 12 x 1024,
50304 tokens). As nanoGPT writes it: ``device = 'cuda'``, ``torch.amp.autocast(device_type,
dtype=ptdtype)`` also for float32, a GradScaler enabled for float16, AdamW with decay and
no-decay groups (fused on CUDA), gradient accumulation, clipping at 1.0, pinned batches
copied with ``non_blocking``. Not compiled (``--compile`` off): a quick-dev job runs eager.

    python benchmarks/gpu_models/nanogpt.py --config gpt2 --dtype bfloat16
"""

from __future__ import annotations

import argparse
import inspect
import math
from contextlib import nullcontext

import torch
from torch import nn
from torch.nn import functional as F

CONFIGS = {
    "shakespeare_char": dict(
        batch_size=64, block_size=256, n_layer=6, n_head=6, n_embd=384, dropout=0.2,
        vocab_size=65, learning_rate=1e-3, beta2=0.99, gradient_accumulation_steps=1,
    ),
    "gpt2": dict(
        batch_size=12, block_size=1024, n_layer=12, n_head=12, n_embd=768, dropout=0.0,
        vocab_size=50304, learning_rate=6e-4, beta2=0.95, gradient_accumulation_steps=4,
    ),
}  # fmt: skip
# --tiny: the same code at sizes a CPU runs in a second (the benchmark's dry run).
TINY = dict(batch_size=4, block_size=32, n_layer=2, n_head=2, n_embd=64)


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (nanoGPT's own)."""

    def __init__(self, ndim: int, bias: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float, bias: bool) -> None:
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head, self.n_embd, self.dropout = n_head, n_embd, dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0, is_causal=True
        )
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, n_embd: int, dropout: float, bias: bool) -> None:
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float, bias: bool) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(n_embd, bias)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout, bias)
        self.ln_2 = LayerNorm(n_embd, bias)
        self.mlp = MLP(n_embd, dropout, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, c: dict, bias: bool = False) -> None:  # type: ignore[type-arg]
        super().__init__()
        self.block_size = c["block_size"]
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(c["vocab_size"], c["n_embd"]),
                wpe=nn.Embedding(c["block_size"], c["n_embd"]),
                drop=nn.Dropout(c["dropout"]),
                h=nn.ModuleList(
                    Block(c["n_embd"], c["n_head"], c["dropout"], bias) for _ in range(c["n_layer"])
                ),
                ln_f=LayerNorm(c["n_embd"], bias),
            )
        )
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * c["n_layer"]))

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):  # type: ignore[no-untyped-def]
        device = idx.device
        _, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(
                logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1
            )
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):  # type: ignore[no-untyped-def]
        params = [p for p in self.parameters() if p.requires_grad]
        decay = [p for p in params if p.dim() >= 2]
        nodecay = [p for p in params if p.dim() < 2]
        groups = [
            {"params": decay, "weight_decay": weight_decay},
            {"params": nodecay, "weight_decay": 0.0},
        ]
        fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and device_type == "cuda"
        extra_args = dict(fused=True) if use_fused else dict()
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, **extra_args)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", choices=sorted(CONFIGS), default="shakespeare_char")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="bfloat16")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--max_iters", type=int, default=3)
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    c = dict(CONFIGS[args.config]) | (TINY if args.tiny else {})

    torch.manual_seed(1337)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device = args.device
    device_type = "cuda" if "cuda" in device else "cpu"
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[
        args.dtype
    ]
    ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type, dtype=ptdtype)

    # nanoGPT reads np.memmap'd token files; the same batches, from random tokens.
    data = torch.randint(0, c["vocab_size"], (c["block_size"] * c["batch_size"] * 8,))

    def get_batch() -> tuple[torch.Tensor, torch.Tensor]:
        block, batch = c["block_size"], c["batch_size"]
        ix = torch.randint(len(data) - block, (batch,))
        x = torch.stack([data[i : i + block] for i in ix])
        y = torch.stack([data[i + 1 : i + 1 + block] for i in ix])
        if device_type == "cuda":
            return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(
                device, non_blocking=True
            )
        return x.to(device), y.to(device)

    model = GPT(c).to(device)
    scaler = torch.amp.GradScaler("cuda", enabled=(args.dtype == "float16"))
    optimizer = model.configure_optimizers(0.1, c["learning_rate"], (0.9, c["beta2"]), device_type)
    accumulation = c["gradient_accumulation_steps"]

    X, Y = get_batch()
    iter_num = 0
    while True:
        for _ in range(accumulation):
            with ctx:
                _, loss = model(X, Y)
                loss = loss / accumulation
            X, Y = get_batch()  # the next batch, fetched while the GPU works
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        print(f"iter {iter_num}: loss {loss.item() * accumulation:.4f}")
        iter_num += 1
        if iter_num >= args.max_iters:
            break


if __name__ == "__main__":
    main()
