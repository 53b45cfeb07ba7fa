"""Light arithmetic, heavy activations: a wide first convolution whose outputs are 50 MB each
at batch 64 (a BatchNorm's, a ReLU's and their gradients as many), with a wide head so that
the parameters times the batch's elements do not make it cheap without a look."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(128, 3, 64, 64), torch.randint(0, 10, (128,)))
loader = DataLoader(data, batch_size=64)
model = nn.Sequential(
    nn.Conv2d(3, 48, 3, padding=1),
    nn.BatchNorm2d(48),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(48, 20000),
    nn.ReLU(),
    nn.Linear(20000, 10),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("trained on", x.shape[0])
