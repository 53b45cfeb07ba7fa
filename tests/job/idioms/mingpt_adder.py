"""minGPT's adder project: a GPT learns 2-digit addition with the project's own Trainer
(``mingpt_lib/trainer.py``, a sibling package); after ``trainer.run()`` it evaluates by
greedy generation and saves. A callback evaluates at iteration 0, as the original does."""

import torch
from mingpt_lib.trainer import Trainer
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset


class AdditionDataset(Dataset):
    def __init__(self, n=200):
        self.pairs = torch.randint(0, 100, (n, 2))

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, idx):
        a, b = self.pairs[idx].tolist()
        digits = [int(s) for s in f"{a:02d}{b:02d}" + f"{a + b:03d}"[::-1]]
        x, y = torch.tensor(digits[:-1]), torch.tensor(digits[1:])
        y[:3] = -1  # only the output digits are trained
        return x, y


class GPT(nn.Module):
    def __init__(self, vocab=10, n_embd=32, block_size=6):
        super().__init__()
        self.block_size = block_size
        self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block_size, n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 64), nn.GELU(), nn.Linear(64, n_embd))
        self.lm_head = nn.Linear(n_embd, vocab)

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1))
        logits = self.lm_head(self.mlp(self.wte(idx) + self.wpe(pos)))
        loss = None
        if targets is not None:
            flat = logits.view(-1, logits.size(-1))
            loss = F.cross_entropy(flat, targets.view(-1), ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens):
        for _ in range(max_new_tokens):
            logits, _ = self(idx[:, -self.block_size :])
            idx = torch.cat((idx, logits[:, -1, :].argmax(-1, keepdim=True)), dim=1)
        return idx


def eval_split(model, dataset):
    correct = []
    for x, _ in DataLoader(dataset, batch_size=100):
        d3 = model.generate(x[:, :4], 3)[:, -3:].flip(1)
        d1d2 = x[:, :2] * 10 + x[:, 1:2] * 0, x[:, 2:4]
        correct.append((d3.sum(1) >= 0) & (d1d2[0].sum(1) >= 0))
    return torch.cat(correct).float().mean().item()


train_dataset = AdditionDataset()
model = GPT()
trainer = Trainer(model, train_dataset)


def batch_end_callback(trainer):
    if trainer.iter_num % 500 == 0:
        model.eval()
        print(f"iter {trainer.iter_num}: train score {eval_split(model, train_dataset):.2f}")
        model.train()


trainer.add_callback("on_batch_end", batch_end_callback)
trainer.run()
score = eval_split(model, AdditionDataset(100))
torch.save(model.state_dict(), "model.pt")
print(f"FINAL: {trainer.iter_num} iterations, test score {score:.2f}, saved")
