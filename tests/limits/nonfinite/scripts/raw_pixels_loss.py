"""Softmax regression on images whose pixels were left in 0..255 (the scaling to 0..1
forgotten), with a hand-written cross-entropy over one-hot targets. The first batch's logits
are hundreds apart: softmax underflows to exactly 0, its log is -inf, and the one-hot
target's zeros times -inf are NaN."""

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset


def cross_entropy(logits, target):
    probs = torch.softmax(logits, dim=-1)
    log_probs = torch.log(probs)
    one_hot = F.one_hot(target, logits.shape[-1]).float()
    return -(one_hot * log_probs).sum(dim=-1).mean()


def make_data(n=512):
    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (n, 3, 32, 32), generator=g, dtype=torch.uint8)
    labels = torch.randint(0, 10, (n,), generator=g)
    return TensorDataset(images, labels)


def main():
    torch.manual_seed(0)
    loader = DataLoader(make_data(), batch_size=64, shuffle=True)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    for epoch in range(2):
        for images, labels in loader:
            loss = cross_entropy(model(images.float()), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
