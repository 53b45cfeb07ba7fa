"""CUDA's autocast policy, asked of torch's own AutocastCUDA kernels on this CPU build: the
dtypes each call's inputs are cast to and its results have on a GPU, for the torch in use."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from quickdev.limits.device.cuda_policy import CudaPolicy, Policy
from torch.nn import functional as F

F16, F32, BF16 = torch.float16, torch.float32, torch.bfloat16


def ask(
    func: Any, *args: Any, dtypes: list[torch.dtype], autocast: Any = F16, **kwargs: Any
) -> Policy:
    policy = CudaPolicy().of(func, args, kwargs, dtypes, autocast)
    assert policy is not None
    return policy


def test_products_run_in_the_regions_16_bit_dtype() -> None:
    a, b = torch.randn(2, 3, 4), torch.randn(2, 4, 5)
    assert ask(torch.bmm, a, b, dtypes=[F32, F32]) == Policy((F16, F16), (F16,))
    assert ask(torch.Tensor.__matmul__, a, b, dtypes=[F32, F32]).results == (F16,)
    w, bias = torch.randn(5, 4), torch.randn(5)
    assert ask(F.linear, a, w, bias, dtypes=[F32, F32, F32]) == Policy((F16, F16, F16), (F16,))
    assert ask(torch.bmm, a, b, dtypes=[F32, F32], autocast=BF16).results == (BF16,)


def test_exp_softmax_norms_and_losses_run_in_float32() -> None:
    x = torch.randn(4, 5)
    assert ask(torch.exp, x, dtypes=[F16]) == Policy((F32,), (F32,))
    assert ask(F.softmax, x, dim=-1, dtypes=[F16]).results == (F32,)
    assert ask(F.layer_norm, x, (5,), dtypes=[F16]).results == (F32,)
    target = torch.zeros(4, dtype=torch.long)
    assert ask(F.cross_entropy, x, target, dtypes=[F16, torch.long]).results == (F32,)


def test_other_calls_follow_their_inputs() -> None:
    x = torch.randn(4, 5)
    assert ask(F.gelu, x, dtypes=[F16]) == Policy((None,), (F16,))
    assert ask(torch.Tensor.__add__, x, x, dtypes=[F16, F32]).results == (F32,)
    assert ask(torch.cat, [x, x], dtypes=[F16, F32]).results == (F32,)
    # Indexing needs a CUDA device in torch's Python binding: answered from the dtypes.
    assert ask(torch.Tensor.__getitem__, x, (slice(None), 0), dtypes=[F16]).results == (F16,)


def test_outside_a_region_nothing_is_cast() -> None:
    a, b = torch.randn(2, 3, 4), torch.randn(2, 4, 5)
    assert ask(torch.bmm, a, b, dtypes=[F32, F32], autocast=None) == Policy((None, None), (F32,))
    assert ask(torch.exp, a, dtypes=[F16], autocast=None).results == (F16,)


def test_a_call_that_reads_values_has_no_answer_and_changes_nothing() -> None:
    x = torch.randn(4, 5)
    assert CudaPolicy().of(torch.nonzero, (x,), {}, [F16], F16) is None
    assert not torch.is_autocast_enabled("cuda")


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_the_regions_dtype_is_put_back(dtype: torch.dtype) -> None:
    before = torch.get_autocast_dtype("cuda")
    ask(torch.bmm, torch.randn(1, 2, 2), torch.randn(1, 2, 2), dtypes=[F32, F32], autocast=dtype)
    assert torch.get_autocast_dtype("cuda") == before
    assert not torch.is_autocast_enabled("cuda")
