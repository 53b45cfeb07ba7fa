"""A learning-rate range test (the rate grows each step until training diverges) on a
bag-of-words classifier. With Adam the steps grow with the rate until a parameter
overflows."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

VOCAB, CLASSES = 50, 4


class BagOfWords(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(VOCAB, CLASSES, bias=False)

    def forward(self, counts):
        frequencies = counts / counts.sum(dim=1, keepdim=True)
        return self.fc(frequencies)


def make_data(n=2000):
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, CLASSES, (n,), generator=g)
    counts = torch.randint(0, 3, (n, VOCAB), generator=g).float() + 0.1
    counts[torch.arange(n), labels * 10] += 5.0
    return TensorDataset(counts, labels)


def main():
    torch.manual_seed(0)
    model = BagOfWords()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.3**step)
    loader = DataLoader(make_data(), batch_size=16, shuffle=True)
    for _ in range(5):
        for counts, labels in loader:
            loss = nn.functional.cross_entropy(model(counts), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            schedule.step()
    print(loss.item())


if __name__ == "__main__":
    main()
