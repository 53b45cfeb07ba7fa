"""Eager execution: ``torch.compile`` hands back the function or module it was given,
so breakpoints inside it are hit and no compilation time is spent. The result says so
(the script may still print "compiling the model…": that line is the script's own)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch

from quickdev.limits.patching import Patcher

DYNAMO_DISABLE_ENV = "TORCHDYNAMO_DISABLE"
# The line result.json's settings_changed gets once the script called torch.compile.
COMPILE_OFF = "torch.compile: on → off (the model runs eagerly)"


def install(patcher: Patcher, on_compile: Callable[[], None] = lambda: None) -> None:
    """``on_compile`` is called each time the script asks for compilation."""

    def compile(model: Any = None, **kwargs: Any) -> Any:
        on_compile()
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
