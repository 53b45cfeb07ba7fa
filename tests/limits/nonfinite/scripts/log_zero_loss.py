"""Classification with a hand-written label-smoothed loss. It takes the log of softmax
probabilities; once the model is confident, a wrong class's probability underflows to 0."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def smoothed_cross_entropy(logits, target, smoothing=0.1):
    probs = torch.softmax(logits, dim=-1)
    log_probs = torch.log(probs)
    classes = logits.shape[-1]
    weights = torch.full_like(log_probs, smoothing / (classes - 1))
    weights.scatter_(1, target[:, None], 1.0 - smoothing)
    return -(weights * log_probs).sum(dim=-1).mean()


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 3)

    def forward(self, x):
        return self.head(self.features(x))


def make_data(n=600):
    g = torch.Generator().manual_seed(0)
    centers = torch.tensor([[-4.0, 0.0], [4.0, 0.0], [0.0, 6.0]])
    target = torch.randint(0, 3, (n,), generator=g)
    x = centers[target] + 0.5 * torch.randn(n, 2, generator=g)
    return TensorDataset(x, target)


def main():
    torch.manual_seed(0)
    loader = DataLoader(make_data(), batch_size=20, shuffle=True)
    model = Classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    for epoch in range(10):
        for x, target in loader:
            loss = smoothed_cross_entropy(model(x), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
