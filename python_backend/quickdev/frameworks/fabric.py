"""Lightning Fabric: logger folders in the run directory, CPU when needed.

Fabric leaves the loop to the script, so the DataLoader patch and the budgets bound it
like any hand-written loop (``setup_dataloaders`` wraps DataLoaders, which stay
limited). What Fabric adds is loggers with their own root directories; ``fabric.save``
writes through its checkpoint I/O, which the file journal covers like any other write.
Its loggers go where Lightning's Trainer puts its own (``RUN_DIR/lightning``).
"""

from __future__ import annotations

import functools
import inspect
import logging
from types import ModuleType
from typing import Any

from quickdev.frameworks.base import Framework, Limits
from quickdev.frameworks.lightning import (
    REPORTED_SETTINGS,
    Lightning,
    LightningLimits,
    no_gpu_for_lightning,
)

log = logging.getLogger(__name__)

FABRIC_MODULES = ("lightning.fabric.fabric", "lightning_fabric.fabric")


class Fabric(Framework):
    name = "Fabric"
    packages = ("lightning_fabric",)  # and lightning.fabric, with Lightning

    def install(self, limits: Limits) -> None:
        placing = LightningLimits(limits, Lightning().folder_in(limits.run_dir))
        limits.when_imported(FABRIC_MODULES, lambda module: _patch(module, limits, placing))


def _patch(module: ModuleType, limits: Limits, placing: LightningLimits) -> None:
    fabric_cls = module.Fabric
    original_init = fabric_cls.__init__
    signature = inspect.signature(original_init)
    self_name = next(iter(signature.parameters))

    @functools.wraps(original_init)
    def __init__(fabric: Any, *args: Any, **kwargs: Any) -> None:
        if limits.cpu_only:
            # By name, so the script's other positionals (precision, plugins, ...) stay.
            given = dict(signature.bind(fabric, *args, **kwargs).arguments)
            given.pop(self_name)
            arguments = {**given, "accelerator": "cpu", "devices": 1, "strategy": "auto"}
            if str(arguments.get("precision")) in ("16", "16-mixed"):
                arguments["precision"] = "bf16-mixed"  # fp16 autocast needs CUDA
            reported = {name: given[name] for name in REPORTED_SETTINGS if name in given}
            limits.settings_overridden("Fabric", reported, arguments)
            args, kwargs = (), arguments
        with no_gpu_for_lightning(limits.cpu_only):
            original_init(fabric, *args, **kwargs)
        placing.keep_outputs_in_run_dir(fabric)

    limits.replace(fabric_cls, "__init__", __init__)
    log.info("limits installed on %s.Fabric", module.__name__)
