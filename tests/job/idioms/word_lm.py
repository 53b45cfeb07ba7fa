"""The word-language-model example in small: manual batching over a whole corpus with
``--epochs``, hand-written SGD, full validation passes, the best model saved whole and
loaded back for the test pass."""

import argparse
import math

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=40)
parser.add_argument("--batch_size", type=int, default=20)
parser.add_argument("--bptt", type=int, default=35)
parser.add_argument("--lr", type=float, default=20)
parser.add_argument("--save", type=str, default="model.pt")
args = parser.parse_args()

torch.manual_seed(0)
ntokens = 500
corpus = torch.randint(0, ntokens, (400_000,))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data[: nbatch * bsz].view(bsz, -1).t().contiguous()


train_data = batchify(corpus[:300_000], args.batch_size)
val_data = batchify(corpus[300_000:350_000], 10)
test_data = batchify(corpus[350_000:], 10)


class RNNModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(ntokens, 64)
        self.rnn = nn.LSTM(64, 64)
        self.decoder = nn.Linear(64, ntokens)

    def forward(self, x):
        out, _ = self.rnn(self.encoder(x))
        return self.decoder(out).view(-1, ntokens)


model = RNNModel()
criterion = nn.CrossEntropyLoss()


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)


def evaluate(source):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for i in range(0, source.size(0) - 1, args.bptt):
            data, targets = get_batch(source, i)
            total += len(data) * criterion(model(data), targets).item()
    return total / (len(source) - 1)


def train():
    model.train()
    for i in range(0, train_data.size(0) - 1, args.bptt):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        loss = criterion(model(data), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-args.lr)


best_val_loss = None
for epoch in range(1, args.epochs + 1):
    train()
    val_loss = evaluate(val_data)
    print(f"epoch {epoch} valid ppl {math.exp(min(val_loss, 50)):.2f}")
    if not best_val_loss or val_loss < best_val_loss:
        with open(args.save, "wb") as f:
            torch.save(model, f)
        best_val_loss = val_loss
# The best model, loaded back whole for the test evaluation.
with open(args.save, "rb") as f:
    model = torch.load(f, weights_only=False)
test_loss = evaluate(test_data)
print(f"test ppl {math.exp(min(test_loss, 50)):.2f}")
