"""Hugging Face ``Trainer``: its own limits, its outputs in the run dir.

Like Lightning (lightning.py), the Trainer is told to stop by itself: ``max_steps`` at
the batch limit, one epoch, evaluation every pass limited by the DataLoader patch (its
loaders are DataLoaders), logging each pass, no worker processes, no hub pushes, and
``output_dir`` (checkpoints, TensorBoard logs) under ``RUN_DIR/hf``. Models saved to a
directory (``save_pretrained``, ``save_model``) go there too. A loop the script writes
with accelerate alone is accelerate's adapter's (accelerate.py).
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from quickdev.frameworks.base import Framework, LensFacts, Limits

log = logging.getLogger(__name__)

# Integrations that write into output_dir; the others need accounts or a network.
_LOCAL_REPORTERS = ("tensorboard", "csv")
# Settings the result names when the job replaced them (epochs, workers, integrations,
# precision); max_steps and the logging, evaluation and saving cadence are the batch
# budget's, and the directories are reported as outputs.
_REPORTED_SETTINGS = (
    "num_train_epochs",
    "dataloader_num_workers",
    "dataloader_persistent_workers",
    "report_to",
    "push_to_hub",
    "fp16",
)
# (class, method, directory parameter, its position after self), per module.
SAVES = {
    "transformers.trainer": [("Trainer", "save_model", "output_dir", 0)],
    "transformers.modeling_utils": [("PreTrainedModel", "save_pretrained", "save_directory", 0)],
}


class HuggingFace(Framework):
    name = "Hugging Face"
    packages = ("transformers",)
    folder = "hf"  # output_dir, saved models, states
    # Trainer.train(): an entry point, not a Lightning script.
    lens = LensFacts(trainer_classes=frozenset({"Trainer"}), entry_methods=frozenset({"train"}))
    cached_cuda_checks = (("transformers.utils.import_utils", "is_torch_cuda_available"),)

    def install(self, limits: Limits) -> None:
        hf = HuggingFaceLimits(limits, self.folder_in(limits.run_dir), SAVES)
        limits.when_imported(["transformers.training_args"], hf.patch_arguments)
        limits.when_imported(list(SAVES), hf.patch_saves)


Saves = dict[str, list[tuple[str, str, str, int]]]


class HuggingFaceLimits:
    """The Trainer's arguments in a quick-dev job, and saves to a directory (``saves``:
    per module, the methods that take one) moved under ``root``."""

    def __init__(self, limits: Limits, root: Path, saves: Saves) -> None:
        self.limits = limits
        self.root = root
        self.saves = saves

    def directory(self, requested: str | os.PathLike[str] | None) -> str:
        """Where a directory the script names is written instead."""
        if requested is None:
            return str(self.root)
        return str(self.limits.place(requested, self.root))

    def patch_arguments(self, module: ModuleType) -> None:
        arguments_cls = module.TrainingArguments
        original = arguments_cls.__post_init__
        hf = self

        @functools.wraps(original)
        def __post_init__(args: Any) -> None:
            before = {name: getattr(args, name, None) for name in _REPORTED_SETTINGS}
            hf.limit(args)
            after = {name: getattr(args, name, None) for name in _REPORTED_SETTINGS}
            hf.limits.settings_overridden("TrainingArguments", before, after)
            original(args)

        self.limits.replace(arguments_cls, "__post_init__", __post_init__)
        log.info("limits installed on transformers.TrainingArguments")

    def limit(self, args: Any) -> None:
        """Set the fields before TrainingArguments validates and derives the rest."""
        budget = self.limits.budget
        batches = self.limits.batches
        args.output_dir = self.directory(getattr(args, "output_dir", None) or "trainer_output")
        if hasattr(args, "logging_dir") and args.logging_dir:
            args.logging_dir = self.directory(args.logging_dir)
        reporters = args.report_to
        if isinstance(reporters, str):
            reporters = [reporters]
        if reporters is not None and reporters not in (["all"], ["none"]):
            kept = [r for r in reporters if r in _LOCAL_REPORTERS]
            if kept != reporters:  # left as written when nothing is dropped
                args.report_to = kept or "none"
        elif reporters == ["all"]:
            args.report_to = "tensorboard"
        args.push_to_hub = False
        args.dataloader_num_workers = 0
        args.dataloader_persistent_workers = False
        args.dataloader_prefetch_factor = None
        if batches is not None:
            user_max = args.max_steps if args.max_steps and args.max_steps > 0 else None
            # The NaN hunt trains for its step budget, not --batches.
            per_pass = batches if budget.batches_bound_training else None
            args.max_steps = min(filter(None, (user_max, per_pass, budget.max_steps)))
            args.num_train_epochs = 1
            # At the default interval of 500, a few steps would log nothing.
            args.logging_steps = args.max_steps
            if str(getattr(args, "eval_strategy", "no")).endswith("steps"):
                args.eval_steps = args.max_steps
            if str(getattr(args, "save_strategy", "no")).endswith("steps"):
                args.save_steps = args.max_steps
        if self.limits.cpu_only:
            args.use_cpu = True
            args.fp16 = False

    def patch_saves(self, module: ModuleType) -> None:
        for owner_name, method, parameter, position in self.saves[module.__name__]:
            owner = getattr(module, owner_name)
            original = getattr(owner, method)
            self.limits.replace(owner, method, self._redirecting(original, parameter, position))

    def _redirecting(
        self, original: Callable[..., Any], parameter: str, position: int
    ) -> Callable[..., Any]:
        """``original`` with its directory argument moved into the run directory."""
        hf = self

        @functools.wraps(original)
        def redirected(owner: Any, *args: Any, **kwargs: Any) -> Any:
            args_list = list(args)
            if parameter in kwargs:
                if kwargs[parameter] is not None:
                    kwargs[parameter] = hf.directory(kwargs[parameter])
            elif len(args_list) > position and args_list[position] is not None:
                args_list[position] = hf.directory(args_list[position])
            return original(owner, *args_list, **kwargs)

        return redirected
