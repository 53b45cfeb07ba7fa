"""A Hugging Face style loop without the library: a dataset of dicts, batches moved to the
device key by key, the model called with ``**batch`` and answering a dict with its loss."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

VOCAB, SEQ, BATCH, LABELS = 100, 16, 8, 2
device = "cpu"


class Tokens(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        ids = torch.randint(0, VOCAB, (SEQ,))
        return {
            "input_ids": ids,
            "attention_mask": torch.ones(SEQ, dtype=torch.long),
            "labels": i % LABELS,
        }


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.head = nn.Linear(32, LABELS)

    def forward(self, input_ids, attention_mask, labels=None):
        hidden = self.embed(input_ids) * attention_mask.unsqueeze(-1)
        logits = self.head(hidden.mean(1))
        loss = F.cross_entropy(logits, labels)
        return {"loss": loss, "logits": logits}


model = Classifier().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _epoch in range(3):
    for batch in DataLoader(Tokens(), batch_size=BATCH):
        batch = {k: v.to(device) for k, v in batch.items()}
        outputs = model(**batch)
        outputs["loss"].backward()
        optimizer.step()
        optimizer.zero_grad()
