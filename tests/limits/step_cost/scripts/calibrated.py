"""A training loader, then an evaluation loader of the same model. The first training step
does work the estimate cannot see (a Python loop of 0.6 s of CPU, as a script's own
metrics or augmentation would), so it takes far longer than estimated."""

import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

EVALUATION_BATCH = 256


def build() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 20000),
        nn.ReLU(),
        nn.Linear(20000, 10),
    )


def main() -> None:
    torch.set_num_threads(1)  # the estimate's cores, the same on any machine
    data = TensorDataset(torch.randn(512, 3, 32, 32), torch.randint(0, 10, (512,)))
    train = DataLoader(data, batch_size=32)
    evaluation = DataLoader(data, batch_size=EVALUATION_BATCH)
    model = build()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(train):
        if step == 0:
            spun = time.process_time()
            while time.process_time() - spun < 0.6:
                pass
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        for x, _ in evaluation:
            model(x)
            print("evaluated", x.shape[0])


if __name__ == "__main__":
    main()
