"""torch.compile hands back what it was given while the limits are installed."""

from __future__ import annotations

import os

import pytest
import torch
from quickdev.limits import eager
from quickdev.limits.patching import Patcher


def double(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@pytest.mark.parametrize("previous", [None, "0"])
def test_compile_is_a_no_op_and_undo_restores_it(
    previous: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if previous is None:
        monkeypatch.delenv(eager.DYNAMO_DISABLE_ENV, raising=False)
    else:
        monkeypatch.setenv(eager.DYNAMO_DISABLE_ENV, previous)
    original = torch.compile
    model = torch.nn.Linear(2, 2)
    patcher = Patcher()
    eager.install(patcher)
    try:
        assert torch.compile(model) is model
        assert torch.compile(model, mode="max-autotune", fullgraph=True) is model
        assert torch.compile(mode="reduce-overhead")(double) is double  # decorator with options
        assert torch.compile(double)(torch.ones(1)).item() == 2
        assert os.environ[eager.DYNAMO_DISABLE_ENV] == "1"
    finally:
        patcher.undo_all()
    assert torch.compile is original
    assert os.environ.get(eager.DYNAMO_DISABLE_ENV) == previous
