"""skorch: ``NeuralNetClassifier(module, max_epochs=…).fit(X, y)`` runs its epoch loop in the
library (``NeuralNet.fit_loop``).

The loop is skorch's, so no loop exit of the job's reaches it; ``max_epochs`` (or
``fit``'s ``epochs``) is the knob. ``fit_loop`` is given at most the train_passes budget's
epochs, so ``fit`` returns and the script's ``predict``, ``score`` and ``save_params`` run.
Its iterators are DataLoaders: each epoch's training and validation passes are limited by
the batch budget.
"""

from __future__ import annotations

import functools
import logging
from types import ModuleType
from typing import Any

from quickdev.frameworks.base import Framework, Limits, library_epochs

log = logging.getLogger(__name__)


class Skorch(Framework):
    name = "skorch"
    packages = ("skorch",)

    def install(self, limits: Limits) -> None:
        limits.when_imported(["skorch.net"], lambda m: _patch_fit_loop(m, limits))


def _patch_fit_loop(module: ModuleType, limits: Limits) -> None:
    net_cls = module.NeuralNet
    original = net_cls.fit_loop

    @functools.wraps(original)
    def fit_loop(net: Any, X: Any, y: Any = None, epochs: int | None = None, **kw: Any) -> Any:
        # ``epochs`` when the script calls fit_loop itself; fit() leaves it to max_epochs.
        knob = "max_epochs" if epochs is None else "fit_loop's epochs"
        planned = net.max_epochs if epochs is None else epochs
        epochs = library_epochs(limits, f"{type(net).__name__}.{knob}", planned, "skorch")
        return original(net, X, y, epochs, **kw)

    limits.replace(net_cls, "fit_loop", fit_loop)
    log.info("limits installed on skorch's NeuralNet.fit_loop")
