"""makemore's training loop: an InfiniteDataLoader over a sampler of 1e10 samples (its
``next()`` re-iterates the loader on StopIteration), ``while True`` until a --max-steps of
-1 ("infinite"), evaluation and sampling every few hundred steps. The copy adds a final
phase after the loop (evaluate, sample, save) that only an ended loop reaches."""

import argparse

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, RandomSampler, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--max-steps", type=int, default=-1, help="-1 for infinite")
parser.add_argument("--num-workers", "-n", type=int, default=4)
parser.add_argument("--batch-size", "-b", type=int, default=32)
args = parser.parse_args()


class InfiniteDataLoader:
    def __init__(self, dataset, **kwargs):
        train_sampler = RandomSampler(dataset, replacement=True, num_samples=int(1e10))
        self.train_loader = DataLoader(dataset, sampler=train_sampler, **kwargs)
        self.data_iter = iter(self.train_loader)

    def next(self):
        try:
            batch = next(self.data_iter)
        except StopIteration:  # "basically never"
            self.data_iter = iter(self.train_loader)
            batch = next(self.data_iter)
        return batch


class Bigram(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.logits = nn.Parameter(torch.zeros(vocab, vocab))

    def forward(self, idx, targets=None):
        logits = self.logits[idx]
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


@torch.no_grad()
def generate(model, idx, max_new_tokens):
    for _ in range(max_new_tokens):
        logits, _ = model(idx)
        idx_next = torch.multinomial(F.softmax(logits[:, -1, :], dim=-1), num_samples=1)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


@torch.inference_mode()
def evaluate(model, dataset, batch_size=50, max_batches=None):
    model.eval()
    losses = []
    for i, (x, y) in enumerate(DataLoader(dataset, shuffle=True, batch_size=batch_size)):
        losses.append(model(x, y)[1].item())
        if max_batches is not None and i >= max_batches:
            break
    model.train()
    return sum(losses) / len(losses)


words = torch.randint(1, 27, (512, 16))
train_dataset = TensorDataset(words[:, :-1], words[:, 1:])
model = Bigram(27)
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01)
batch_loader = InfiniteDataLoader(
    train_dataset, batch_size=args.batch_size, pin_memory=True, num_workers=args.num_workers
)

step = 0
while True:
    X, Y = batch_loader.next()
    logits, loss = model(X, Y)
    model.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if step > 0 and step % 500 == 0:
        print(f"step {step} test loss {evaluate(model, train_dataset, 100, 10):.3f}")
    step += 1
    if args.max_steps >= 0 and step >= args.max_steps:
        break

test_loss = evaluate(model, train_dataset, batch_size=100, max_batches=10)
samples = generate(model, torch.zeros(10, 1, dtype=torch.long), 15)
torch.save(model.state_dict(), "model.pt")
print(f"FINAL: {step} steps, test loss {test_loss:.3f}, {tuple(samples.shape)} sampled, saved")
