"""Checkpoints that say their tensors live on a GPU, written on a machine without one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


def save_as_if_on(obj: Any, path: Path, location: str) -> Path:
    """``torch.save`` with every storage tagged ``location`` ("cuda:1"), as a GPU run
    writes it; on a CPU-only machine a plain ``torch.load`` of it fails."""

    def tag(storage: Any) -> str | None:
        return location

    # Location tags are what torch.load reads back; faking them is the only way to
    # write a CUDA checkpoint without a GPU.
    registry = torch.serialization._package_registry
    before = list(registry)
    torch.serialization.register_package(1, tag, lambda storage, location: None)
    try:
        torch.save(obj, path)
    finally:
        registry[:] = before  # the registry is sorted: ours need not be last
    return path
