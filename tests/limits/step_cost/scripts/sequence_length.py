"""Sequences padded to each batch's longest; the model's positional table holds 48
positions. One sample in 97 is 60 long: a batch of 128 has one, its first 8 samples not."""

import argparse

import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=128)
args = parser.parse_args()


class Sequences(Dataset):
    def __len__(self) -> int:
        return 512

    def __getitem__(self, index: int):
        length = 60 if index % 97 == 50 else 8 + index % 16
        return torch.randint(0, 50, (length,)), index % 3


def collate(items):
    tokens, labels = zip(*items, strict=True)
    return pad_sequence(tokens, batch_first=True), torch.tensor(labels)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.positions = nn.Parameter(torch.zeros(1, 48, 16))
        self.head = nn.Linear(16, 3)

    def forward(self, tokens):
        length = tokens.shape[1]
        hidden = self.embed(tokens) + self.positions[:, :length]
        return self.head(hidden.mean(1))


loader = DataLoader(Sequences(), batch_size=args.batch_size, collate_fn=collate)
model = Model()
optimizer = torch.optim.Adam(model.parameters())
for tokens, labels in loader:
    loss = nn.functional.cross_entropy(model(tokens), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("trained")
