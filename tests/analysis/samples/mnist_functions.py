"""An image classifier in the layout of pytorch/examples' mnist: a Net with forward, a
train(...) function whose loop steps the optimizer, a test(...) that only evaluates, and
main() behind a main guard."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return F.log_softmax(self.fc2(x), dim=1)


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)  # EACH STEP
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx}]\tLoss: {loss.item():.6f}")


def test(model, device, test_loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data.to(device))
            correct += output.argmax(dim=1).eq(target.to(device)).sum().item()
    print(f"Accuracy: {correct}")


def main():
    parser = argparse.ArgumentParser(description="MNIST-style example")
    parser.add_argument("--epochs", type=int, default=14)
    parser.add_argument("--log-interval", type=int, default=10)
    args = parser.parse_args()
    device = torch.device("cpu")
    data = torch.utils.data.TensorDataset(torch.randn(256, 1, 28, 28), torch.randint(10, (256,)))
    train_loader = torch.utils.data.DataLoader(data, batch_size=64)
    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, train_loader)
        scheduler.step()


if __name__ == "__main__":
    main()
