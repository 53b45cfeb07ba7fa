# A plain PyTorch loop with no main guard: the script does its work at top level.
import torch
import torch.nn as nn
import torch.utils.data as data


class Pairs(data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        return torch.randn(4), torch.randn(1)


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


def train_one_epoch(model, loader, opt):
    for x, y in loader:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()


def evaluate(model, loader):
    return sum(float(model(x).sum()) for x, _ in loader)


model = Regressor()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = data.DataLoader(Pairs(), batch_size=8)
for epoch in range(3):
    train_one_epoch(model, loader, opt)
    print(epoch, evaluate(model, loader))
