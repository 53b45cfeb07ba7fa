"""A preprocessing step before training: ``multiprocessing.Pool.map`` tokenizes the
documents in worker processes (fork, Linux's default), then the parent trains a small
language model on the result. Synthetic documents; ``--length`` makes them long."""

import argparse
import os
from multiprocessing import Pool

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

VOCAB = 64
CHUNK = 8


def encode(item):
    index, text = item
    if index % CHUNK == 0:
        print(f"worker {os.getpid()} encodes document {index}", flush=True)
    return [ord(c) % VOCAB for c in text][:16]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=64)
    parser.add_argument("--length", type=int, default=40)
    args = parser.parse_args()
    text = ("a synthetic corpus of documents " * (args.length // 32 + 1))[: args.length]
    corpus = [(i, text) for i in range(args.documents)]  # one text: long ones cost no memory
    with Pool(2) as pool:
        encoded = pool.map(encode, corpus, chunksize=CHUNK)
    print(f"encoded {len(encoded)} documents", flush=True)
    tokens = torch.tensor(encoded)
    loader = DataLoader(TensorDataset(tokens[:, :-1], tokens[:, 1:]), batch_size=8, shuffle=True)
    model = nn.Sequential(nn.Embedding(VOCAB, 16), nn.Linear(16, VOCAB))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _epoch in range(10):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    print("trained", flush=True)
