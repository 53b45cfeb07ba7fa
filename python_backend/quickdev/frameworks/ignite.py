"""pytorch-ignite: ``Engine.run(data, max_epochs=…)`` runs the epoch loop in the library.

The loop is ignite's, so no loop exit of the job's reaches it; its own ``max_epochs`` is
the knob. ``Engine.run`` is given at most the train_passes budget's epochs (one, unless
the script was given an epochs option), and ``epoch_length`` at most the batch budget for
data that is not a DataLoader (which is limited by itself). Evaluators run through the
same ``run`` with one epoch; handlers (checkpoints, metrics, logging) run as ignite fires
them, the checkpoints' files kept in the run directory by the file journal.
"""

from __future__ import annotations

import functools
import inspect
import logging
from types import ModuleType
from typing import Any

from quickdev.frameworks.base import Framework, LensFacts, Limits, library_epochs

log = logging.getLogger(__name__)


class Ignite(Framework):
    name = "ignite"
    packages = ("ignite",)
    lens = LensFacts(
        trainer_classes=frozenset({"Engine", "create_supervised_trainer"}),
        entry_methods=frozenset({"run"}),
        script_packages=frozenset({"ignite"}),
    )

    def install(self, limits: Limits) -> None:
        limits.when_imported(["ignite.engine.engine"], lambda m: _patch_run(m, limits))


def _patch_run(module: ModuleType, limits: Limits) -> None:
    engine_cls = module.Engine
    original = engine_cls.run
    signature = inspect.signature(original)

    @functools.wraps(original)
    def run(engine: Any, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(engine, *args, **kwargs)
        _limit(engine, bound.arguments, limits)
        return original(*bound.args, **bound.kwargs)

    limits.replace(engine_cls, "run", run)
    log.info("limits installed on ignite's Engine.run")


def _limit(engine: Any, arguments: dict[str, Any], limits: Limits) -> None:
    state = getattr(engine, "state", None)
    done = int(getattr(state, "epoch", 0) or 0)  # resumed from a checkpoint
    planned = arguments.get("max_epochs")
    if planned is not None and arguments.get("max_iters") is None:
        epochs = library_epochs(limits, "Engine.run's max_epochs", planned - done, "ignite")
        if epochs is not None:
            arguments["max_epochs"] = done + epochs
    batches = limits.batches
    if batches is None or not limits.budget.batches_bound_training:
        return
    data = arguments.get("data")
    length = arguments.get("epoch_length")
    if length is None and data is not None and hasattr(data, "__len__"):
        length = len(data)
    if length is not None and length > batches:
        arguments["epoch_length"] = batches
