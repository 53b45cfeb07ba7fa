"""Lightning: the effect of ``fast_dev_run=N`` with loggers and checkpoints kept in the run dir.

``fast_dev_run`` throws logs and checkpoints away; a quick-dev job wants to show
that they work, so it sets the same limits one by one instead. Both ``lightning``
and ``pytorch_lightning`` are handled, when the script imports them: the Trainer is
patched the moment its module loads, so a script that never uses Lightning never pays
for importing it.

Its default root and the directories of its checkpoint callbacks and loggers are
redirected into ``RUN_DIR/lightning`` (so TensorBoard lists them while the job runs);
any other file (``trainer.save_checkpoint(path)``, Fabric's ``save``) is left to the
file journal (``quickdev.limits.journal``), which keeps it in the run directory too.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from quickdev.frameworks.base import Framework, LensFacts, Limits

log = logging.getLogger(__name__)

TRAINER_MODULES = ("lightning.pytorch.trainer.trainer", "pytorch_lightning.trainer.trainer")
# Settings of the script's Trainer or Fabric that the result names when the job replaced
# them (epochs, devices, precision). The batch limits, logging cadence and directories
# are the job's budgets and outputs, reported as such.
REPORTED_SETTINGS = (
    "max_epochs",
    "min_epochs",
    "max_time",
    "fast_dev_run",
    "accelerator",
    "devices",
    "strategy",
    "precision",
)


# Where Lightning's own "is there a GPU?" is asked (Fabric's class and the Trainer's).
CUDA_ACCELERATOR_MODULES = (
    "lightning.fabric.accelerators.cuda",
    "lightning.pytorch.accelerators.cuda",
    "lightning_fabric.accelerators.cuda",
    "pytorch_lightning.accelerators.cuda",
)


@contextlib.contextmanager
def no_gpu_for_lightning(cpu_only: bool) -> Iterator[None]:
    """While the job makes a Trainer or Fabric it placed on the CPU, Lightning is told what
    this machine has: no GPU. The CUDA stand-in's "one device" is for the script's own code;
    Lightning heard it and printed "GPU available: True (cuda), used: False" and advised
    ``Trainer(accelerator='gpu')``, both false on this CPU."""
    swapped: list[tuple[Any, Any]] = []
    if cpu_only:
        for name in CUDA_ACCELERATOR_MODULES:
            accelerator = getattr(sys.modules.get(name), "CUDAAccelerator", None)
            if accelerator is not None and "is_available" in vars(accelerator):
                swapped.append((accelerator, vars(accelerator)["is_available"]))
                accelerator.is_available = staticmethod(lambda: False)
    try:
        yield
    finally:
        for accelerator, original in swapped:
            accelerator.is_available = original


class Lightning(Framework):
    name = "Lightning"
    packages = ("lightning", "pytorch_lightning")
    folder = "lightning"  # its default_root_dir (logs, checkpoints)
    lens = LensFacts(
        trainer_classes=frozenset({"Trainer"}),
        entry_methods=frozenset({"fit", "validate", "test"}),
        # LightningCLI fits by default.
        entry_constructors=frozenset({"LightningCLI"}),
        module_bases=frozenset({"LightningModule"}),
        step_methods=frozenset({"training_step", "validation_step", "test_step", "predict_step"}),
        script_packages=frozenset({"lightning", "pytorch_lightning"}),
        scan_label="lightning",
    )
    debug_imports = ("lightning.pytorch", "pytorch_lightning")

    def install(self, limits: Limits) -> None:
        trainer = LightningLimits(limits, self.folder_in(limits.run_dir))
        limits.when_imported(TRAINER_MODULES, trainer.patch_trainer)


class LightningLimits:
    """The Trainer's settings in a quick-dev job; Fabric (``fabric.py``) places its loggers
    the same way."""

    def __init__(self, limits: Limits, root: Path) -> None:
        self.limits = limits
        self.root = root
        self.budget = limits.budget

    def patch_trainer(self, module: ModuleType) -> None:
        trainer_cls = module.Trainer
        original_init = trainer_cls.__init__
        limits = self

        @functools.wraps(original_init)
        def __init__(trainer: Any, *args: Any, **kwargs: Any) -> None:
            used = limits.trainer_kwargs(kwargs)
            given = {name: kwargs[name] for name in REPORTED_SETTINGS if name in kwargs}
            limits.limits.settings_overridden("Trainer", given, used)
            with no_gpu_for_lightning(limits.limits.cpu_only):
                original_init(trainer, *args, **used)
            limits.keep_outputs_in_run_dir(trainer)

        self.limits.replace(trainer_cls, "__init__", __init__)
        log.info("limits installed on %s.Trainer", module.__name__)

    def trainer_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        batches = self.limits.batches
        given_epochs = kwargs.get("max_epochs")
        kwargs = dict(kwargs)
        kwargs.pop("fast_dev_run", None)
        if not self.limits.keep_outputs:
            requested_root = kwargs.get("default_root_dir")
            if requested_root and not self.limits.inside(requested_root):
                self.limits.redirected(str(Path(os.path.abspath(requested_root))), str(self.root))
            kwargs["default_root_dir"] = str(self.root)
        if batches is not None:
            for split in ("train", "val", "test", "predict"):
                kwargs[f"limit_{split}_batches"] = batches
            kwargs["max_epochs"] = 1
            kwargs["min_epochs"] = None
            kwargs["min_steps"] = None
            kwargs["max_time"] = None
            kwargs["num_sanity_val_steps"] = 0
            kwargs["val_check_interval"] = 1.0
            kwargs["check_val_every_n_epoch"] = 1
            kwargs["overfit_batches"] = 0.0
            # At the default interval of 50, a few steps would log nothing; once per
            # pass shows that logging works without paying for a write every step.
            kwargs["log_every_n_steps"] = batches
        if not self.budget.batches_bound_training:
            # The NaN hunt trains for its step budget, over the script's own epochs.
            kwargs["limit_train_batches"] = 1.0
            kwargs["max_epochs"] = given_epochs
        if self.budget.max_steps is not None:
            user_max = kwargs.get("max_steps", -1)
            kwargs["max_steps"] = (
                self.budget.max_steps
                if user_max in (None, -1)
                else min(user_max, self.budget.max_steps)
            )
            # Lightning ends at max_steps gracefully and then runs test. Ending the train
            # epoch at the same point makes its end-of-epoch validation run too.
            self.budget.leave_steps_to_trainer()
            if batches is not None and self.budget.batches_bound_training:
                kwargs["limit_train_batches"] = min(batches, kwargs["max_steps"])
                kwargs["log_every_n_steps"] = kwargs["limit_train_batches"]
        if self.limits.cpu_only:
            kwargs["accelerator"] = "cpu"
            kwargs["devices"] = 1
            kwargs["strategy"] = "auto"
            if str(kwargs.get("precision")) in ("16", "16-mixed"):
                kwargs["precision"] = "bf16-mixed"  # fp16 autocast needs CUDA
        return kwargs

    def keep_outputs_in_run_dir(self, trainer: Any) -> None:
        if self.limits.keep_outputs:
            return
        for callback in getattr(trainer, "checkpoint_callbacks", []):
            dirpath = getattr(callback, "dirpath", None)
            if dirpath and not self.limits.inside(dirpath):
                callback.dirpath = str(self._moved("checkpoints", dirpath))
        for logger in getattr(trainer, "loggers", []):
            for attr in ("_root_dir", "_save_dir"):
                value = getattr(logger, attr, None)
                if isinstance(value, (str, os.PathLike)) and not self.limits.inside(value):
                    setattr(logger, attr, str(self._moved("logs", value)))

    def _moved(self, kind: str, path: str | os.PathLike[str]) -> Path:
        return self.limits.place(path, self.root / kind)
