"""pytorch/examples' word_language_model (main.py, model.py): a 2-layer LSTM language model.

The README's "medium" configuration (650 embedding and hidden units, dropout 0.5, batch 20,
35-token BPTT) over WikiText-2's 33,278-word vocabulary, on random tokens. As the example
trains: the corpus batchified onto the device, the hidden state detached each step,
``model.zero_grad()``, NLLLoss on log-softmax, clipping at 0.25 and hand-written SGD
(``p.data.add_(p.grad, alpha=-lr)``). ``--amp-dtype`` wraps the forward and loss in
``torch.autocast("cuda", ...)``, as the torch.amp recipe adds it.

    python benchmarks/gpu_models/lstm_lm.py --amp-dtype bfloat16
"""

from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.nn import functional as F


class RNNModel(nn.Module):
    def __init__(self, ntoken: int, ninp: int, nhid: int, nlayers: int, dropout: float) -> None:
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, input, hidden):  # type: ignore[no-untyped-def]
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz: int):  # type: ignore[no-untyped-def]
        weight = next(self.parameters())
        return (
            weight.new_zeros(self.nlayers, bsz, self.nhid),
            weight.new_zeros(self.nlayers, bsz, self.nhid),
        )


def repackage_hidden(h):  # type: ignore[no-untyped-def]
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--emsize", type=int, default=650)
    parser.add_argument("--nhid", type=int, default=650)
    parser.add_argument("--nlayers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=20)
    parser.add_argument("--clip", type=float, default=0.25)
    parser.add_argument("--batch_size", type=int, default=20)
    parser.add_argument("--bptt", type=int, default=35)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--amp-dtype", choices=["bfloat16", "float16"], default=None)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    ntokens = 33278 if not args.tiny else 500
    if args.tiny:
        args.emsize = args.nhid = 32

    torch.manual_seed(1111)
    device = torch.device(args.device)
    # corpus.train as batchify() leaves it: (tokens / batch, batch), on the device.
    corpus = torch.randint(0, ntokens, (args.bptt * (args.steps + 1) * args.batch_size,))
    train_data = corpus.view(args.batch_size, -1).t().contiguous().to(device)

    model = RNNModel(ntokens, args.emsize, args.nhid, args.nlayers, args.dropout).to(device)
    criterion = nn.NLLLoss()
    dtype = getattr(torch, args.amp_dtype) if args.amp_dtype else None

    model.train()
    hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, args.bptt * args.steps, args.bptt)):
        seq_len = min(args.bptt, len(train_data) - 1 - i)
        data = train_data[i : i + seq_len]
        targets = train_data[i + 1 : i + 1 + seq_len].view(-1)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        with torch.autocast("cuda", dtype=dtype or torch.float16, enabled=dtype is not None):
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-args.lr)
        print(f"batch {batch}: loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
