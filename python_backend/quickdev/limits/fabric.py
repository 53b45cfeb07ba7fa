"""Lightning Fabric: checkpoints and logger folders in the run directory, CPU when needed.

Fabric leaves the loop to the script, so the DataLoader patch and the budgets bound it
like any hand-written loop (``setup_dataloaders`` wraps DataLoaders, which stay
limited). What Fabric adds is its own saving (``fabric.save`` writes through its
checkpoint I/O, not ``torch.save``) and loggers with their own root directories.
"""

from __future__ import annotations

import functools
import logging
import os
from types import ModuleType
from typing import Any

from quickdev.limits.import_hook import when_imported
from quickdev.limits.lightning import LightningLimits
from quickdev.limits.patching import Patcher

log = logging.getLogger(__name__)

FABRIC_MODULES = ("lightning.fabric.fabric", "lightning_fabric.fabric")


def install(patcher: Patcher, lightning: LightningLimits) -> None:
    when_imported(patcher, FABRIC_MODULES, lambda module: _patch(module, patcher, lightning))


def _patch(module: ModuleType, patcher: Patcher, lightning: LightningLimits) -> None:
    fabric_cls = module.Fabric
    original_init = fabric_cls.__init__
    original_save = fabric_cls.save
    original_load = fabric_cls.load
    redirector = lightning.redirector

    @functools.wraps(original_init)
    def __init__(fabric: Any, *args: Any, **kwargs: Any) -> None:
        if lightning.cpu_only:
            kwargs.update(accelerator="cpu", devices=1, strategy="auto")
            if str(kwargs.get("precision")) in ("16", "16-mixed"):
                kwargs["precision"] = "bf16-mixed"  # fp16 autocast needs CUDA
            args = ()  # accelerator, strategy, devices are the leading positionals
        original_init(fabric, *args, **kwargs)
        lightning.keep_outputs_in_run_dir(fabric)

    @functools.wraps(original_save)
    def save(fabric: Any, path: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(path, (str, os.PathLike)):
            path = redirector.target_for_save(path)
        return original_save(fabric, path, *args, **kwargs)

    @functools.wraps(original_load)
    def load(fabric: Any, path: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(path, (str, os.PathLike)):
            path = redirector.target_for_load(path) or path
        return original_load(fabric, path, *args, **kwargs)

    patcher.set(fabric_cls, "__init__", __init__)
    patcher.set(fabric_cls, "save", save)
    patcher.set(fabric_cls, "load", load)
    log.info("limits installed on %s.Fabric", module.__name__)
