"""pytorch/examples mnist_hogwild's shape: a model in shared memory trained by several
processes, each with a DataLoader of its own over rows read from a CSV file; one row has a
missing reading. The start method is the script's option, as in the example."""

import argparse
import os
import tempfile

import numpy as np
import torch
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--num-processes", type=int, default=2)
parser.add_argument("--start-method", default="spawn")


class CsvRows(Dataset):
    def __init__(self, path):
        table = np.genfromtxt(path, delimiter=",")
        self.features = table[:, :-1]
        self.labels = table[:, -1].astype(np.int64)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        x = torch.tensor(self.features[index], dtype=torch.float32)
        return x, int(self.labels[index])


def write_csv(path, rows=200):
    rng = np.random.default_rng(0)
    with open(path, "w") as f:
        for i in range(rows):
            values = rng.normal(size=5)
            cells = [f"{v:.4f}" for v in values]
            if i == 37:
                cells[2] = ""  # the missing reading
            f.write(",".join(cells) + f",{int(values[0] > 0)}\n")


def train(rank, args, model, path):
    torch.manual_seed(1 + rank)
    loader = DataLoader(CsvRows(path), batch_size=8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    for epoch in range(1, args.epochs + 1):
        model.train()
        for batch_idx, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            print(f"{os.getpid()}\tTrain Epoch: {epoch} [{batch_idx}]\tLoss: {loss.item():.4f}")


if __name__ == "__main__":
    args = parser.parse_args()
    mp.set_start_method(args.start_method, force=True)
    path = os.path.join(tempfile.mkdtemp(), "rows.csv")
    write_csv(path)
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 2))
    model.share_memory()
    processes = []
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, model, path))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
