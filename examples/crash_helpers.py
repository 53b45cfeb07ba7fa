"""Helpers for crash_deep.py: the bug lives here, a few calls below the training loop."""

from __future__ import annotations

import torch
from torch import nn


class Projection(nn.Module):
    def __init__(self, features: int, out: int) -> None:
        super().__init__()
        # Bug: the layer is built for ``out`` inputs instead of ``features``.
        self.linear = nn.Linear(out, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return project(self.linear, x)


def project(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return layer(x)  # the shape mismatch surfaces here, inside torch
