"""Tabular classification read from a CSV file; one row has a missing reading."""

import os
import sys
import tempfile

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


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


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "rows.csv")
    write_csv(path)
    loader = DataLoader(CsvRows(path), batch_size=8)
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(2):
        for x, y in loader:
            loss = criterion(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(epoch, loss.item())


if __name__ == "__main__":
    main()
