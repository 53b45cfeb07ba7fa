"""Small, faithful training steps of the styles the forecast must handle, as functions a
job can run in-process (``quickdev.run(fn, memory_forecast=...)``): each builds its model
on CUDA as the script would (the job stands the CPU in), trains a few steps and returns.
No downloads: data is random tensors of the right shapes."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, TensorDataset

DEVICE = "cuda"  # as the scripts write it; the job maps it to this machine's device


def mlp(width: int, depth: int) -> nn.Sequential:
    return nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(depth)])


def mlp_training(batch: int, width: int, depth: int, steps: int = 2) -> Callable[[], None]:
    """Plain float32, AdamW, a loss computed outside the model (``out.pow(2).mean()``)."""

    def train() -> None:
        torch.manual_seed(0)
        model = mlp(width, depth).to(DEVICE)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for _ in range(steps):
            x = torch.randn(batch, width, device=DEVICE)
            loss = model(x).pow(2).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

    return train


class CausalSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's shape: ModuleDict of embeddings and blocks, a tied head, the loss in forward."""

    def __init__(
        self,
        vocab: int,
        block: int,
        layers: int,
        heads: int,
        width: int,
        checkpointed: bool = False,
    ) -> None:
        super().__init__()
        self.checkpointed = checkpointed  # each block's activations recomputed in backward
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(vocab, width),
                wpe=nn.Embedding(block, width),
                h=nn.ModuleList(Block(width, heads) for _ in range(layers)),
                ln_f=nn.LayerNorm(width),
            )
        )
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):  # type: ignore[no-untyped-def]
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = checkpoint(block, x, use_reentrant=False) if self.checkpointed else block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def gpt_training(
    batch: int = 64,
    block: int = 256,
    layers: int = 6,
    width: int = 384,
    heads: int = 6,
    autocast: bool = True,
    checkpointed: bool = False,
) -> Callable[[], None]:
    """nanoGPT's character-level Shakespeare configuration: hand-made batches, bfloat16
    autocast on "cuda" (``autocast``), AdamW, gradient clipping; ``checkpointed``: each
    block under torch.utils.checkpoint."""

    def train() -> None:
        torch.manual_seed(0)
        data = torch.randint(0, 65, (block * batch * 4,))
        model = GPT(65, block, layers, heads, width, checkpointed).to(DEVICE)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99))
        for _ in range(2):
            ix = torch.randint(len(data) - block - 1, (batch,))
            x = torch.stack([data[i : i + block] for i in ix]).to(DEVICE)
            y = torch.stack([data[i + 1 : i + 1 + block] for i in ix]).to(DEVICE)
            region = (
                torch.autocast(device_type="cuda", dtype=torch.bfloat16)
                if autocast
                else contextlib.nullcontext()
            )
            with region:
                _, loss = model(x, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    return train


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    """ResNet-18 for 32x32 images, as the CIFAR examples write it."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.linear = nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)
        return self.linear(out)


def cnn_training(batch: int = 128, images: int = 256) -> Callable[[], None]:
    """A CIFAR-style loop: DataLoader, SGD with momentum, ``criterion(outputs, targets)``."""

    def train() -> None:
        torch.manual_seed(0)
        data = TensorDataset(torch.randn(images, 3, 32, 32), torch.randint(0, 10, (images,)))
        loader = DataLoader(data, batch_size=batch, shuffle=True)
        model = ResNet().to(DEVICE)
        criterion = nn.CrossEntropyLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
        model.train()
        for inputs, targets in loader:
            inputs, targets = inputs.to(DEVICE), targets.to(DEVICE)
            optimizer.zero_grad()
            loss = criterion(model(inputs), targets)
            loss.backward()
            optimizer.step()

    return train


class RNNModel(nn.Module):
    """The word-language-model example's LSTM: (time, batch) inputs, a carried hidden state."""

    def __init__(self, ntoken: int, ninp: int, nhid: int, nlayers: int) -> None:
        super().__init__()
        self.drop = nn.Dropout(0.2)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=0.2)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid, self.ntoken = nlayers, nhid, ntoken

    def forward(self, x, hidden):  # type: ignore[no-untyped-def]
        output, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz: int) -> tuple[torch.Tensor, torch.Tensor]:
        weight = next(self.parameters())
        shape = (self.nlayers, bsz, self.nhid)
        return weight.new_zeros(shape), weight.new_zeros(shape)


def lstm_training(batch: int = 20, bptt: int = 35, ntoken: int = 10000) -> Callable[[], None]:
    """Hand-written SGD, ``NLLLoss`` on the flattened output, hidden state detached."""

    def train() -> None:
        torch.manual_seed(0)
        data = torch.randint(0, ntoken, (bptt * 4 + 1, batch)).to(DEVICE)
        model = RNNModel(ntoken, 200, 200, 2).to(DEVICE)
        criterion = nn.NLLLoss()
        hidden = model.init_hidden(batch)
        model.train()
        for i in range(0, bptt * 4, bptt):
            x, targets = data[i : i + bptt], data[i + 1 : i + 1 + bptt].reshape(-1)
            model.zero_grad()
            hidden = tuple(h.detach() for h in hidden)
            output, hidden = model(x, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-20)

    return train


def analytic_mlp_bytes(batch: int, width: int, depth: int) -> dict[str, int]:
    """What an MLP's step holds, from its shapes: float32 weights and biases, AdamW's two
    moments per parameter, and each block's ReLU output kept for backward."""
    params = depth * (width * width + width) * 4
    return {
        "parameters": params,
        "adamw_state": 2 * params,
        "block_activations": batch * width * 4,
        "per_block_parameters": (width * width + width) * 4,
    }


def within(value: float, expected: float, share: float = 0.05) -> bool:
    return math.isclose(value, expected, rel_tol=share)
