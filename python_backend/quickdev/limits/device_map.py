"""Run a CUDA script on the CPU: ``.cuda()``, ``.to("cuda")`` and CUDA checkpoints land on the CPU.

Installed for ``--device cpu``, and for ``--device auto`` where CUDA is missing.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from quickdev.limits.patching import Patcher


def resolve_device(requested: str) -> str:
    """The device the job runs on: ``cuda`` only for ``auto`` with CUDA present."""
    if requested == "auto" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def _is_cuda(device: Any) -> bool:
    if isinstance(device, str):
        return device.startswith("cuda")
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return False


def _cpu_args(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if args and _is_cuda(args[0]):
        args = ("cpu", *args[1:])
    if _is_cuda(kwargs.get("device")):
        kwargs = {**kwargs, "device": "cpu"}
    return args, kwargs


def install(patcher: Patcher) -> None:
    original_tensor_to = torch.Tensor.to
    original_module_to = nn.Module.to
    original_load = torch.load

    def tensor_to(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = _cpu_args(args, kwargs)
        return original_tensor_to(tensor, *args, **kwargs)

    def module_to(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = _cpu_args(args, kwargs)
        return original_module_to(module, *args, **kwargs)

    def tensor_cuda(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        return tensor

    def module_cuda(module: nn.Module, device: Any = None) -> nn.Module:
        return module

    def load(f: Any, map_location: Any = None, *args: Any, **kwargs: Any) -> Any:
        # Tensors saved on any CUDA device (cuda:1 included) are restored on the CPU;
        # a callable map_location is the user's own choice.
        if map_location is None or _is_cuda(map_location) or isinstance(map_location, dict):
            map_location = "cpu"
        return original_load(f, map_location, *args, **kwargs)

    patcher.set(torch.Tensor, "to", tensor_to)
    patcher.set(nn.Module, "to", module_to)
    patcher.set(torch.Tensor, "cuda", tensor_cuda)
    patcher.set(nn.Module, "cuda", module_cuda)
    patcher.set(torch, "load", load)
    patcher.set(torch.cuda, "is_available", lambda: False)
    patcher.set(torch.cuda, "device_count", lambda: 0)
    patcher.set(torch.cuda, "synchronize", lambda device=None: None)
