"""Lightning: the effect of ``fast_dev_run=N`` with loggers and checkpoints kept in the run dir.

``fast_dev_run`` throws logs and checkpoints away; a quick-dev job wants to show
that they work, so it sets the same limits one by one instead. Both ``lightning``
and ``pytorch_lightning`` are handled, when the script imports them: an import
hook patches the Trainer the moment its module loads, so a script that never uses
Lightning never pays for importing it.

Its default root and the directories of its checkpoint callbacks and loggers are
redirected into ``RUN_DIR/lightning`` (so TensorBoard lists them while the job runs);
any other file (``trainer.save_checkpoint(path)``, Fabric's ``save``) is left to the
file journal (``quickdev.limits.journal``), which keeps it in the run directory too.
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from quickdev.limits.budget import Budget
from quickdev.limits.import_hook import when_imported
from quickdev.limits.outputs import OutputPlacer
from quickdev.limits.patching import Patcher
from quickdev.rundir.layout import LIGHTNING_DIR

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


class LightningLimits:
    def __init__(
        self,
        run_dir: Path,
        batches: int | None,
        budget: Budget,
        cpu_only: bool,
        placer: OutputPlacer,
    ) -> None:
        self.root = Path(os.path.abspath(run_dir)) / LIGHTNING_DIR
        self.batches = batches
        self.budget = budget
        self.cpu_only = cpu_only
        self.placer = placer

    def install(self, patcher: Patcher) -> None:
        when_imported(patcher, TRAINER_MODULES, lambda module: self.patch_trainer(module, patcher))

    def patch_trainer(self, module: ModuleType, patcher: Patcher) -> None:
        trainer_cls = module.Trainer
        original_init = trainer_cls.__init__
        limits = self

        @functools.wraps(original_init)
        def __init__(trainer: Any, *args: Any, **kwargs: Any) -> None:
            used = limits.trainer_kwargs(kwargs)
            given = {name: kwargs[name] for name in REPORTED_SETTINGS if name in kwargs}
            limits.placer.recorder.settings_overridden("Trainer", given, used)
            original_init(trainer, *args, **used)
            limits.keep_outputs_in_run_dir(trainer)

        patcher.set(trainer_cls, "__init__", __init__)
        log.info("limits installed on %s.Trainer", module.__name__)

    def trainer_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        given_epochs = kwargs.get("max_epochs")
        kwargs = dict(kwargs)
        kwargs.pop("fast_dev_run", None)
        if not self.placer.keep_outputs:
            requested_root = kwargs.get("default_root_dir")
            if requested_root and not self.placer.inside(requested_root):
                self.placer.recorder.redirected(
                    str(Path(os.path.abspath(requested_root))), str(self.root)
                )
            kwargs["default_root_dir"] = str(self.root)
        if self.batches is not None:
            for split in ("train", "val", "test", "predict"):
                kwargs[f"limit_{split}_batches"] = self.batches
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
            kwargs["log_every_n_steps"] = self.batches
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
            if self.batches is not None and self.budget.batches_bound_training:
                kwargs["limit_train_batches"] = min(self.batches, kwargs["max_steps"])
                kwargs["log_every_n_steps"] = kwargs["limit_train_batches"]
        if self.cpu_only:
            kwargs["accelerator"] = "cpu"
            kwargs["devices"] = 1
            kwargs["strategy"] = "auto"
            if str(kwargs.get("precision")) in ("16", "16-mixed"):
                kwargs["precision"] = "bf16-mixed"  # fp16 autocast needs CUDA
        return kwargs

    def keep_outputs_in_run_dir(self, trainer: Any) -> None:
        if self.placer.keep_outputs:
            return
        for callback in getattr(trainer, "checkpoint_callbacks", []):
            dirpath = getattr(callback, "dirpath", None)
            if dirpath and not self._inside(dirpath):
                callback.dirpath = str(self._moved("checkpoints", dirpath))
        for logger in getattr(trainer, "loggers", []):
            for attr in ("_root_dir", "_save_dir"):
                value = getattr(logger, attr, None)
                if isinstance(value, (str, os.PathLike)) and not self._inside(value):
                    setattr(logger, attr, str(self._moved("logs", value)))

    def _inside(self, path: str | os.PathLike[str]) -> bool:
        return self.placer.inside(path)

    def _moved(self, kind: str, path: str | os.PathLike[str]) -> Path:
        return self.placer.place(path, self.root / kind)
