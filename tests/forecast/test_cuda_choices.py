"""CUDA's choices where the replay runs on the CPU stand-in: autocast's dtypes, fused attention."""

from __future__ import annotations

import torch
from quickdev.forecast.cuda_choices import CudaChoices
from torch.nn import functional as F


def test_ops_cuda_runs_in_float32_give_float32_and_matmuls_stay_16_bit() -> None:
    x = torch.randn(4, 8)
    weight = torch.randn(8, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16), CudaChoices(torch.bfloat16):
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
    with CudaChoices(torch.bfloat16):
        assert F.softmax(half, dim=-1).dtype == torch.bfloat16


def test_attention_with_dropout_keeps_no_time_by_time_matrix() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            self.names.append(str(func))
            return func(*args, **(kwargs or {}))

    with FakeTensorMode():
        q = torch.empty(2, 4, 64, 16, requires_grad=True)
        with Ops() as plain:
            F.scaled_dot_product_attention(q, q, q, dropout_p=0.2, is_causal=True)
        with CudaChoices(None), Ops() as chosen:
            F.scaled_dot_product_attention(q, q, q, dropout_p=0.2, is_causal=True)
    # The CPU's math path multiplies out the whole attention matrix; CUDA's fused kernel not.
    assert "aten.bmm.default" in plain.names
    assert "aten.bmm.default" not in chosen.names
    assert any("flash_attention" in name for name in chosen.names)
