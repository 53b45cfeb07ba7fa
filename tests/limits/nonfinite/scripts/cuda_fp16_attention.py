"""A GPU training script (CUDA device, float16 autocast, GradScaler) whose attention is
written by hand: the scores are exponentiated, the exponentials multiplied with the values
and the sum normalised after (a softmax without its max subtracted, the normalisation
moved last). CUDA's autocast computes exp in float32, so the exponentials are fine on a
GPU; torch.bmm is computed in float16, and casts them to float16, where a score above
about 11 (exp(11.1) = 65504) is inf. One batch holds such scores."""

import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

DEVICE = "cuda"
# The variant that normalises before the product: on a GPU the exponentials stay float32
# until they are at most 1, and nothing overflows.
NORMALISE_FIRST = len(sys.argv) > 1 and sys.argv[1] == "--normalise-first"


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = torch.bmm(q, k.transpose(1, 2)) / q.shape[-1] ** 0.5
        if NORMALISE_FIRST:
            weights = torch.exp(scores)
            weights = weights / weights.sum(dim=-1, keepdim=True)
            return self.proj(torch.bmm(weights, v))
        mixed = torch.bmm(torch.exp(scores), v)
        return self.proj(mixed / torch.exp(scores).sum(dim=-1, keepdim=True))


class Model(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.embed = nn.Linear(4, d)
        self.attn = Attention(d)
        self.out = nn.Linear(d, 1)

    def forward(self, x):
        h = self.embed(x)
        return self.out(h + self.attn(h)).squeeze(-1)


def make_data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(128, 10, 4, generator=g)
    x[48:56] *= 8.0  # a batch of readings in other units: large scores
    return TensorDataset(x, x.sum(dim=-1))


def main():
    torch.manual_seed(0)
    model = Model().to(DEVICE)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    for x, y in DataLoader(make_data(), batch_size=8, pin_memory=True):
        x, y = x.to(DEVICE, non_blocking=True), y.to(DEVICE, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.mse_loss(model(x).float(), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print(loss.item())


if __name__ == "__main__":
    main()
