"""The device engine: a script's requested devices become the ones this job has.

``--device cpu`` (or ``auto`` without CUDA): the script is told it has one CUDA
device, and CUDA devices, indices, checkpoints, ``torch.cuda`` calls, autocast,
GradScaler and NCCL process groups all land on the CPU. ``--device cuda:N``, or
``auto`` on a GPU machine: CUDA indices the machine lacks (a checkpoint from
``cuda:3`` on a one-GPU box) land on one it has.
"""

from __future__ import annotations

import torch

from quickdev.limits.device import (
    autocast,
    availability,
    cuda_shim,
    distributed,
    functions,
    methods,
)
from quickdev.limits.device.engine import DeviceEngine, DeviceUnavailable, resolve_device
from quickdev.limits.patching import Patcher

__all__ = ["DeviceEngine", "DeviceUnavailable", "install", "resolve_device"]


def install(
    patcher: Patcher, requested: str, actual: str, float32_why: str | None = None
) -> DeviceEngine:
    """Install every device idiom for a job on ``actual``; returns the engine that counts.
    ``float32_why``: CUDA autocast regions run in float32 on the CPU, for that reason."""
    cuda_count = torch.cuda.device_count() if actual != "cpu" else 0
    engine = DeviceEngine(requested, actual, cuda_count)
    methods.install(patcher, engine)
    if engine.cpu:
        cuda_shim.install(patcher, engine)
        availability.install(patcher, engine)
        autocast.install(patcher, engine, float32_why=float32_why)
        distributed.install(patcher, engine)
    functions.install(patcher, engine)
    return engine
