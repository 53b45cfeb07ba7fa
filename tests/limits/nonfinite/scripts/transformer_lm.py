"""A word-level Transformer language model in the style of pytorch/examples: a causal mask
made once as log(tril(ones)), so -inf by design, and SGD by hand through p.data. Its
learning rate is far too large, so the activations blow up inside self-attention, where they
meet the mask."""

import math
import sys

import torch
from torch import nn

NTOKENS, EMSIZE, BPTT, BATCH = 200, 32, 12, 8


class TransformerModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_mask = None
        self.encoder = nn.Embedding(NTOKENS, EMSIZE)
        layer = nn.TransformerEncoderLayer(EMSIZE, 2, 64, dropout=0.0)
        self.transformer_encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.decoder = nn.Linear(EMSIZE, NTOKENS)

    def _generate_square_subsequent_mask(self, sz):
        return torch.log(torch.tril(torch.ones(sz, sz)))

    def forward(self, src):
        if self.src_mask is None or self.src_mask.size(0) != len(src):
            self.src_mask = self._generate_square_subsequent_mask(len(src))
        src = self.encoder(src) * math.sqrt(EMSIZE)
        output = self.transformer_encoder(src, mask=self.src_mask)
        return torch.log_softmax(self.decoder(output), dim=-1)


def main():
    lr = float(sys.argv[1]) if len(sys.argv) > 1 else 1e5
    torch.manual_seed(0)
    data = torch.randint(0, NTOKENS, (4000,)).view(BATCH, -1).t().contiguous()
    model = TransformerModel()
    criterion = nn.NLLLoss()
    for i in range(0, data.size(0) - 1, BPTT):
        seq_len = min(BPTT, len(data) - 1 - i)
        source, targets = data[i : i + seq_len], data[i + 1 : i + 1 + seq_len].reshape(-1)
        model.zero_grad()
        output = model(source)
        loss = criterion(output.view(-1, NTOKENS), targets)
        loss.backward()
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
    print(loss.item())


if __name__ == "__main__":
    main()
