"""A bag-of-embeddings text classifier in the Hugging Face manner: token ids padded with
0, ``nn.Embedding(..., padding_idx=0)``, and a mean over the tokens that are not padding.
One review in the data is empty (all padding): its mean divides 0 by 0."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

PAD, VOCAB, LENGTH = 0, 100, 12


class MeanPooled(nn.Module):
    def __init__(self, dim=16, classes=2):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim, padding_idx=PAD)
        self.head = nn.Linear(dim, classes)

    def forward(self, ids):
        mask = (ids != PAD).unsqueeze(-1).float()
        summed = (self.embed(ids) * mask).sum(dim=1)
        pooled = summed / mask.sum(dim=1)
        return self.head(pooled)


def make_data(n=160):
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(3, LENGTH + 1, (n,), generator=g)
    ids = torch.randint(1, VOCAB, (n, LENGTH), generator=g)
    ids[torch.arange(LENGTH)[None, :] >= lengths[:, None]] = PAD
    ids[90] = PAD  # an empty review
    labels = (ids.float().mean(dim=1) > VOCAB / 4).long()
    return TensorDataset(ids, labels)


def main():
    torch.manual_seed(0)
    model = MeanPooled()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for ids, labels in DataLoader(make_data(), batch_size=16):
        loss = nn.functional.cross_entropy(model(ids), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(loss.item())


if __name__ == "__main__":
    main()
