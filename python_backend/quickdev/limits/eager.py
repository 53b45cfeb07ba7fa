"""Eager execution: ``torch.compile`` hands back the function or module it was given,
so breakpoints inside it are hit and no compilation time is spent."""

from __future__ import annotations

import os
from typing import Any

import torch

from quickdev.limits.patching import Patcher

DYNAMO_DISABLE_ENV = "TORCHDYNAMO_DISABLE"


def install(patcher: Patcher) -> None:
    def compile(model: Any = None, **kwargs: Any) -> Any:
        if model is None:  # used as @torch.compile(mode=...)
            return lambda fn: fn
        return model

    patcher.set(torch, "compile", compile)
    # Anything that reaches dynamo another way (torch._dynamo.optimize) runs eagerly too.
    previous = os.environ.get(DYNAMO_DISABLE_ENV)
    os.environ[DYNAMO_DISABLE_ENV] = "1"

    def restore_env() -> None:
        if previous is None:
            os.environ.pop(DYNAMO_DISABLE_ENV, None)
        else:
            os.environ[DYNAMO_DISABLE_ENV] = previous

    patcher.on_undo(restore_env)
