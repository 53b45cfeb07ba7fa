"""The hunt's view of a tensor: finite or not (one reduction, right even when the sum
overflows), and statistics that JSON can hold."""

from __future__ import annotations

import json

import numpy as np
import torch
from quickdev.limits.nonfinite.values import (
    all_finite,
    first_nonfinite,
    nonfinite_argument,
    stats,
)


def test_finite_values_whose_sum_overflows_are_finite() -> None:
    big = torch.full((1000,), 3e38)
    assert big.sum().isinf() and all_finite(big)
    half = torch.full((100,), 60000.0, dtype=torch.float16)
    assert all_finite(half)
    assert not all_finite(torch.tensor([1.0, float("nan")]))
    assert not all_finite(torch.tensor([float("inf"), float("-inf")]))
    assert all_finite(torch.empty(0)) and all_finite(torch.ones(2, device="meta"))


def test_the_first_nonfinite_of_many() -> None:
    tensors = [torch.ones(3), torch.full((2,), 3e38), torch.tensor([0.0, float("inf")])]
    assert first_nonfinite(tensors) == 2
    assert first_nonfinite(tensors[:2]) is None


def test_arguments_that_hand_torch_a_nonfinite_value() -> None:
    assert nonfinite_argument((torch.ones(2), float("-inf")), {}) == "-inf"
    assert nonfinite_argument((np.array([1.0, np.nan]),), {}) == "a numpy array holding NaN"
    assert nonfinite_argument(([[1.0, 2.0], [float("nan"), 0.0]],), {}) == "a list holding NaN"
    assert nonfinite_argument((1, 2.5, np.array([1, 2])), {"value": 0.0}) is None


def test_statistics_count_what_json_cannot_hold() -> None:
    shown = stats(torch.tensor([[0.0, 2.0], [float("nan"), float("-inf")]]))
    assert (shown.nan, shown.posinf, shown.neginf, shown.zeros) == (1, 0, 1, 1)
    assert (shown.min, shown.max, shown.mean) == (0.0, 2.0, 1.0)
    json.dumps(shown.__dict__, allow_nan=False)
    empty = stats(torch.tensor([float("nan")]))
    assert empty.min is None and empty.nan == 1
