"""A tiny causal sequence model trained under float16 autocast. Its attention masks future
positions with -inf (by design) and forgot the 1/sqrt(d) scale: scores are fine on normal
batches, but a batch with a burst of large readings overflows float16 in q @ k^T."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

DEVICE = "cpu"
AMP_DTYPE = torch.float16


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1)
        causal = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))
        weights = torch.softmax(scores.float(), dim=-1)
        return self.proj(weights.to(v.dtype) @ v)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = Attention(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.mlp(x)


class SeqModel(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.embed = nn.Linear(4, d)
        self.blocks = nn.ModuleList([Block(d), Block(d)])
        self.out = nn.Linear(d, 1)

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.out(x).squeeze(-1)


def make_data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 12, 4, generator=g)
    x[160:168] *= 400.0  # a burst of readings in raw units
    y = x.mean(dim=-1)
    return TensorDataset(x, y)


def main():
    torch.manual_seed(0)
    model = SeqModel().to(DEVICE)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = DataLoader(make_data(), batch_size=8)
    for step, (x, y) in enumerate(loader):
        x, y = x.to(DEVICE), y.to(DEVICE)
        with torch.autocast(DEVICE, dtype=AMP_DTYPE):
            pred = model(x)
            loss = nn.functional.mse_loss(pred.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(step, loss.item())


if __name__ == "__main__":
    main()
