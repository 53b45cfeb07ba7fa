"""A nanoGPT-style language model with the Hugging Face habits: a padding token
(``nn.Embedding(..., padding_idx=PAD)``, its row zeroed again by ``_init_weights``), weight
tying, an EMA copy of the weights, and a key-padding mask beside the causal one. Batches
are left-padded. Every sequence is full length but one, the 38th (a short document): its
padded positions, as queries, see only padding under the causal mask, a row masked whole."""

import copy
import math

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

PAD, VOCAB, BLOCK, N_EMBD, N_HEAD, N_LAYER = 0, 50, 16, 32, 2, 4


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(N_EMBD, 3 * N_EMBD)
        self.c_proj = nn.Linear(N_EMBD, N_EMBD)
        self.register_buffer("bias", torch.tril(torch.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK))

    def forward(self, x, padding):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(N_EMBD, dim=2)
        k = k.view(B, T, N_HEAD, C // N_HEAD).transpose(1, 2)
        q = q.view(B, T, N_HEAD, C // N_HEAD).transpose(1, 2)
        v = v.view(B, T, N_HEAD, C // N_HEAD).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = att.masked_fill(padding[:, None, None, :], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(N_EMBD)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(N_EMBD)
        self.mlp = nn.Sequential(
            nn.Linear(N_EMBD, 4 * N_EMBD), nn.GELU(), nn.Linear(4 * N_EMBD, N_EMBD)
        )

    def forward(self, x, padding):
        x = x + self.attn(self.ln_1(x), padding)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(VOCAB, N_EMBD, padding_idx=PAD),
                wpe=nn.Embedding(BLOCK, N_EMBD),
                h=nn.ModuleList([Block() for _ in range(N_LAYER)]),
                ln_f=nn.LayerNorm(N_EMBD),
            )
        )
        self.lm_head = nn.Linear(N_EMBD, VOCAB, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()

    def forward(self, idx, targets):
        padding = idx == PAD
        pos = torch.arange(idx.shape[1])
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x, padding)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, VOCAB), targets.reshape(-1), ignore_index=PAD)


class Documents(Dataset):
    def __init__(self, n=256):
        g = torch.Generator().manual_seed(0)
        self.docs = [torch.randint(1, VOCAB, (BLOCK + 1,), generator=g) for _ in range(n)]
        self.docs[37] = self.docs[37][:6]  # a short document

    def __len__(self):
        return len(self.docs)

    def __getitem__(self, index):
        return self.docs[index]


def left_pad(docs):
    batch = torch.full((len(docs), BLOCK + 1), PAD)
    for row, doc in enumerate(docs):
        batch[row, BLOCK + 1 - len(doc) :] = doc
    return batch[:, :-1], batch[:, 1:]


def main():
    torch.manual_seed(0)
    model = GPT()
    ema = copy.deepcopy(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = DataLoader(Documents(), batch_size=8, collate_fn=left_pad)
    for idx, targets in loader:
        loss = model(idx, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            for e, p in zip(ema.parameters(), model.parameters(), strict=True):
                e.mul_(0.99).add_(p, alpha=0.01)
    print(loss.item())


if __name__ == "__main__":
    main()
