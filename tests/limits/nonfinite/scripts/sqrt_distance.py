"""Metric learning with a hand-written Euclidean distance: an anchor equal to its positive
(a duplicated sample) has distance 0, whose sqrt has an infinite derivative."""

import torch
from torch import nn


def distance(a, b):
    return torch.sqrt(((a - b) ** 2).sum(dim=-1))


def triplet_loss(anchor, positive, negative, margin=1.0):
    return torch.relu(distance(anchor, positive) - distance(anchor, negative) + margin).mean()


class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 8))

    def forward(self, x):
        return self.net(x)


def main():
    torch.manual_seed(0)
    model = Embedder()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(100):
        anchor = torch.randn(16, 10)
        positive = anchor + 0.1 * torch.randn(16, 10)
        if step == 12:
            positive[3] = anchor[3]  # a duplicated sample
        negative = torch.randn(16, 10)
        loss = triplet_loss(model(anchor), model(positive), model(negative))
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(loss.item())


if __name__ == "__main__":
    main()
