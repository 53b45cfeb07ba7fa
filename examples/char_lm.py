"""A character-level language model trained with manual batching (no DataLoader).

Like many classic examples it samples random windows from one tensor of text and
runs a fixed number of iterations, so ``quickdev run`` bounds it with
``--max-steps`` or ``--timeout``. ``--manual-sgd`` updates the weights by hand
instead of through an optimizer.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.nn import functional as F

TEXT = """\
It was the best of times, it was the worst of times, it was the age of wisdom,
it was the age of foolishness, it was the epoch of belief, it was the epoch of
incredulity, it was the season of Light, it was the season of Darkness, it was the
spring of hope, it was the winter of despair, we had everything before us, we had
nothing before us, we were all going direct to Heaven, we were all going direct
the other way.
"""


class CharLM(nn.Module):
    def __init__(self, vocab_size: int, embed: int = 32, hidden: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed)
        self.rnn = nn.GRU(embed, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.rnn(self.embed(tokens))
        return self.head(hidden)


def get_batch(
    data: torch.Tensor, batch_size: int, context: int
) -> tuple[torch.Tensor, torch.Tensor]:
    starts = torch.randint(len(data) - context - 1, (batch_size,))
    inputs = torch.stack([data[s : s + context] for s in starts])
    targets = torch.stack([data[s + 1 : s + context + 1] for s in starts])
    return inputs, targets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=3000)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--context", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--manual-sgd", action="store_true", help="no optimizer: p -= lr * grad")
    args = parser.parse_args()

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    vocab = sorted(set(TEXT))
    data = torch.tensor([vocab.index(c) for c in TEXT], dtype=torch.long)
    model = CharLM(len(vocab)).to(device)
    optimizer = None if args.manual_sgd else torch.optim.AdamW(model.parameters(), lr=args.lr)

    for iteration in range(args.iterations):
        model.train()
        inputs, targets = (t.to(device) for t in get_batch(data, args.batch_size, args.context))
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, len(vocab)), targets.reshape(-1))
        if optimizer is not None:
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        else:
            model.zero_grad(set_to_none=True)
            loss.backward()
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter -= args.lr * 10 * parameter.grad
        if iteration % 100 == 0:
            print(f"iteration {iteration}: loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
