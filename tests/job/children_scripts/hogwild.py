"""pytorch/examples mnist_hogwild's shape: a model in shared memory trained by several
processes (spawn, as the example sets it), each with a DataLoader of its own; the parent
joins them, then tests the model. Synthetic data instead of MNIST."""

import argparse
import os

import torch
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--num-processes", type=int, default=2)
parser.add_argument("--start-method", default="spawn")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


def dataset(n=6400):
    g = torch.Generator().manual_seed(0)
    return TensorDataset(torch.randn(n, 20, generator=g), torch.randint(0, 4, (n,), generator=g))


def train(rank, args, model, data):
    torch.manual_seed(1 + rank)
    loader = DataLoader(data, batch_size=64, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    for epoch in range(1, args.epochs + 1):
        model.train()
        for batch_idx, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = F.nll_loss(model(x), y)
            loss.backward()
            optimizer.step()
            print(
                f"{os.getpid()}\tTrain Epoch: {epoch} [{batch_idx}]\tLoss: {loss.item():.4f}",
                flush=True,
            )


def test(model, data):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in DataLoader(data, batch_size=1000):
            correct += model(x).argmax(1).eq(y).sum().item()
    print(f"Test set: Accuracy: {correct}/{len(data)}", flush=True)


if __name__ == "__main__":
    args = parser.parse_args()
    mp.set_start_method(args.start_method, force=True)
    model = Net()
    model.share_memory()
    data = dataset()
    processes = []
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, model, data))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
    test(model, data)
