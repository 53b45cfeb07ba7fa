"""Data-parallel regression launched by torchrun, in the style of the DDP tutorial series: a
Trainer class, a DistributedSampler, DDP on CPU (gloo). One sample of the dataset is corrupt."""

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

BAD_INDEX = 45  # odd: with two ranks, the sampler gives it to rank 1


class Readings(Dataset):
    def __init__(self, size):
        generator = torch.Generator().manual_seed(0)
        self.data = [
            (torch.rand(20, generator=generator), torch.rand(1, generator=generator))
            for _ in range(size)
        ]
        self.data[BAD_INDEX][0][3] = float("nan")  # a sensor that did not answer

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.data[index]


class Trainer:
    def __init__(self, model, train_data, optimizer):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.model = DDP(model)
        self.train_data = train_data
        self.optimizer = optimizer

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        output = self.model(source)
        loss = F.mse_loss(output, targets)
        loss.backward()
        self.optimizer.step()

    def _run_epoch(self, epoch):
        self.train_data.sampler.set_epoch(epoch)
        for source, targets in self.train_data:
            self._run_batch(source, targets)

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            self._run_epoch(epoch)


def main():
    dist.init_process_group(backend="gloo")
    dataset = Readings(256)
    loader = DataLoader(
        dataset, batch_size=8, shuffle=False, sampler=DistributedSampler(dataset, shuffle=False)
    )
    model = torch.nn.Linear(20, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    Trainer(model, loader, optimizer).train(max_epochs=2)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
