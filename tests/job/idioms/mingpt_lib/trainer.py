"""minGPT's Trainer (mingpt/trainer.py): a sampler of 1e10 samples, ``while True`` that
re-iterates the loader on StopIteration, callbacks each batch, max_iters None."""

import time
from collections import defaultdict

import torch
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, model, train_dataset, max_iters=None, batch_size=64, num_workers=4):
        self.model, self.train_dataset = model, train_dataset
        self.max_iters, self.batch_size, self.num_workers = max_iters, batch_size, num_workers
        self.callbacks = defaultdict(list)
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = self.model.to(self.device)

    def add_callback(self, onevent, callback):
        self.callbacks[onevent].append(callback)

    def trigger_callbacks(self, onevent):
        for callback in self.callbacks.get(onevent, []):
            callback(self)

    def run(self):
        model = self.model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
        train_loader = DataLoader(
            self.train_dataset,
            sampler=torch.utils.data.RandomSampler(
                self.train_dataset, replacement=True, num_samples=int(1e10)
            ),
            shuffle=False,
            pin_memory=True,
            batch_size=self.batch_size,
            num_workers=self.num_workers,
        )
        model.train()
        self.iter_num = 0
        self.iter_time = time.time()
        data_iter = iter(train_loader)
        while True:
            try:
                batch = next(data_iter)
            except StopIteration:
                data_iter = iter(train_loader)
                batch = next(data_iter)
            x, y = [t.to(self.device) for t in batch]
            _logits, self.loss = model(x, y)
            model.zero_grad(set_to_none=True)
            self.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            self.optimizer.step()
            self.trigger_callbacks("on_batch_end")
            self.iter_num += 1
            if self.max_iters is not None and self.iter_num >= self.max_iters:
                break
