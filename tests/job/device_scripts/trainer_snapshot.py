"""The DDP tutorial's Trainer on one GPU: an integer gpu_id, a snapshot saved every
epoch, and a snapshot a GPU run left behind loaded with map_location=f"cuda:{gpu_id}"."""

import os

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class MyTrainDataset(Dataset):
    def __init__(self, size):
        self.data = [(torch.rand(20), torch.rand(1)) for _ in range(size)]

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.data[index]


class Trainer:
    def __init__(self, model, train_data, optimizer, gpu_id, snapshot_path):
        self.gpu_id = gpu_id
        self.model = model.to(gpu_id)
        self.train_data = train_data
        self.optimizer = optimizer
        self.epochs_run = 0
        self.snapshot_path = snapshot_path
        if os.path.exists(snapshot_path):
            snapshot = torch.load(snapshot_path, map_location=f"cuda:{self.gpu_id}")
            self.model.load_state_dict(snapshot["MODEL_STATE"])
            self.epochs_run = snapshot["EPOCHS_RUN"]
            print(f"Resuming training from snapshot at Epoch {self.epochs_run}")

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        loss = F.mse_loss(self.model(source), targets)
        loss.backward()
        self.optimizer.step()

    def train(self, max_epochs):
        for epoch in range(self.epochs_run, max_epochs):
            for source, targets in self.train_data:
                self._run_batch(source.to(self.gpu_id), targets.to(self.gpu_id))
            torch.save(
                {"MODEL_STATE": self.model.state_dict(), "EPOCHS_RUN": epoch + 1},
                self.snapshot_path,
            )
            print(f"[GPU{self.gpu_id}] Epoch {epoch} | snapshot saved")


model = torch.nn.Linear(20, 1)
loader = DataLoader(MyTrainDataset(256), batch_size=32, pin_memory=True, shuffle=True)
trainer = Trainer(model, loader, torch.optim.SGD(model.parameters(), lr=1e-3), 0, "snapshot.pt")
trainer.train(10)
