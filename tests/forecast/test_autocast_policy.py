"""CUDA autocast's dtype choices where the replay runs on the CPU stand-in."""

from __future__ import annotations

import torch
from quickdev.forecast.autocast_policy import CudaAutocastPolicy
from torch.nn import functional as F


def test_ops_cuda_runs_in_float32_give_float32_and_matmuls_stay_16_bit() -> None:
    x = torch.randn(4, 8)
    weight = torch.randn(8, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16), CudaAutocastPolicy(torch.bfloat16):
        hidden = F.linear(x, weight)
        assert hidden.dtype == torch.bfloat16
        assert F.softmax(hidden, dim=-1).dtype == torch.float32
        assert F.layer_norm(hidden, (8,)).dtype == torch.float32
        assert hidden.sum().dtype == torch.float32
        assert torch.mv(x.float(), torch.randn(8)).dtype == torch.bfloat16
    with torch.autocast("cpu", dtype=torch.bfloat16):
        # CPU autocast alone keeps softmax in 16 bits: the difference the policy covers.
        assert F.softmax(F.linear(x, weight), dim=-1).dtype == torch.bfloat16


def test_nothing_is_cast_outside_autocast() -> None:
    half = torch.randn(4, 8, dtype=torch.bfloat16)
    with CudaAutocastPolicy(torch.bfloat16):
        assert F.softmax(half, dim=-1).dtype == torch.bfloat16
