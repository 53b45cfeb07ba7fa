"""Lightning Fabric: logger folders in the run directory, CPU when needed.

Fabric leaves the loop to the script, so the DataLoader patch and the budgets bound it
like any hand-written loop (``setup_dataloaders`` wraps DataLoaders, which stay
limited). What Fabric adds is loggers with their own root directories; ``fabric.save``
writes through its checkpoint I/O, which the file journal covers like any other write.
"""

from __future__ import annotations

import functools
import inspect
import logging
from types import ModuleType
from typing import Any

from quickdev.limits.import_hook import when_imported
from quickdev.limits.lightning import REPORTED_SETTINGS, LightningLimits
from quickdev.limits.patching import Patcher

log = logging.getLogger(__name__)

FABRIC_MODULES = ("lightning.fabric.fabric", "lightning_fabric.fabric")


def install(patcher: Patcher, lightning: LightningLimits) -> None:
    when_imported(patcher, FABRIC_MODULES, lambda module: _patch(module, patcher, lightning))


def _patch(module: ModuleType, patcher: Patcher, lightning: LightningLimits) -> None:
    fabric_cls = module.Fabric
    original_init = fabric_cls.__init__
    signature = inspect.signature(original_init)
    self_name = next(iter(signature.parameters))

    @functools.wraps(original_init)
    def __init__(fabric: Any, *args: Any, **kwargs: Any) -> None:
        if lightning.cpu_only:
            # By name, so the script's other positionals (precision, plugins, ...) stay.
            given = dict(signature.bind(fabric, *args, **kwargs).arguments)
            given.pop(self_name)
            arguments = {**given, "accelerator": "cpu", "devices": 1, "strategy": "auto"}
            if str(arguments.get("precision")) in ("16", "16-mixed"):
                arguments["precision"] = "bf16-mixed"  # fp16 autocast needs CUDA
            reported = {name: given[name] for name in REPORTED_SETTINGS if name in given}
            lightning.placer.recorder.settings_overridden("Fabric", reported, arguments)
            args, kwargs = (), arguments
        original_init(fabric, *args, **kwargs)
        lightning.keep_outputs_in_run_dir(fabric)

    patcher.set(fabric_cls, "__init__", __init__)
    log.info("limits installed on %s.Fabric", module.__name__)
