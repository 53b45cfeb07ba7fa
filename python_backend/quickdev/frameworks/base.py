"""The adapter interface: what Quickdev knows of one training framework, in one place.

A framework (Lightning, Hugging Face, ignite, ...) is one module of this package holding
one ``Framework``: how to recognise it (the packages a script imports), what the editor's
lenses find in a script that uses it (``LensFacts``), which of its imports are worth a
warm start, and ``install``, which limits it to the quick-dev budgets the way its own
settings would (a trainer told to stop by itself, so its end-of-training work runs) and
says what it changed. ``quickdev.frameworks`` lists them all; adding a framework is one
module and one line there.

Torch-free and standard library only: the language server reads the facts, and a job
calls ``install`` with the job's side of the limits (``Limits``), so nothing here imports
the limits themselves (``quickdev.limits.adapters`` provides them).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol


@dataclass(frozen=True)
class LensFacts:
    """What the static analysis (``quickdev.analysis``) finds of a framework in a script."""

    # Constructors whose result is a trainer: ``trainer = Trainer(...)``.
    trainer_classes: frozenset[str] = frozenset()
    # A trainer's methods that run the job when called at top level: ``trainer.fit(...)``.
    entry_methods: frozenset[str] = frozenset()
    # Constructors that run the whole job by themselves (``LightningCLI(...)``).
    entry_constructors: frozenset[str] = frozenset()
    # Base classes of the user's model whose ``step_methods`` are the steps to debug.
    module_bases: frozenset[str] = frozenset()
    step_methods: frozenset[str] = frozenset()
    # Imports that make a file a training script for the lenses, as ``torch`` does.
    script_packages: frozenset[str] = frozenset()
    # How the workspace scan labels a script whose trainer runs the job; None: by its entry.
    scan_label: str | None = None


class Budget(Protocol):
    """The job's budgets, as a framework's own settings can apply them."""

    @property
    def max_steps(self) -> int | None: ...

    @property
    def train_passes(self) -> int | None:
        """Passes over the training loader a training phase may take: a framework's own
        epoch count goes no higher (an epochs option the script was given raises it)."""
        ...

    @property
    def batches_bound_training(self) -> bool:
        """False while the NaN hunt trains for its step budget, over the script's epochs."""
        ...

    def leave_steps_to_trainer(self) -> None:
        """The framework stops at ``max_steps`` by itself, running its end-of-training work:
        the job's step hook must not stop it first."""


class Limits(Protocol):
    """The job's side, handed to ``Framework.install`` (``quickdev.limits.adapters``)."""

    @property
    def run_dir(self) -> Path: ...

    @property
    def batches(self) -> int | None:
        """Per DataLoader pass; None: no limits (``--no-limits``)."""
        ...

    @property
    def cpu_only(self) -> bool:
        """The job runs on this CPU: a framework's devices and precision follow."""
        ...

    @property
    def keep_outputs(self) -> bool:
        """--keep-outputs: files land where the script asks."""
        ...

    @property
    def budget(self) -> Budget: ...

    def when_imported(self, modules: Sequence[str], patch: Callable[[ModuleType], None]) -> None:
        """Run ``patch(module)`` once each of ``modules`` has loaded (now, if it has)."""

    def replace(self, owner: Any, name: str, value: Any) -> Any:
        """``owner.name = value`` for the job; returns the original."""

    def inside(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` is in the run directory."""

    def place(self, requested: str | os.PathLike[str], base: Path) -> Path:
        """Where a folder the script names is written instead (under ``base``), said in the
        result; the folder itself with --keep-outputs or when it is in the run directory."""

    def redirected(self, requested: str, written: str) -> None:
        """Say in the result that ``requested`` was written to ``written``."""

    def settings_overridden(
        self, owner: str, before: Mapping[str, Any], after: Mapping[str, Any]
    ) -> None:
        """Say in the result which of the script's settings (``before``) ran with another
        value (``after``): ``Trainer.max_epochs: 10 → 1``."""

    def setting_changed(self, line: str) -> None:
        """Say in the result, in one line of the adapter's words, what it changed."""


class Framework:
    """One framework's facts and its limits. Subclasses set the facts and ``install``."""

    name = ""  # as the result names it: "Lightning", "Hugging Face"
    # Top-level import names: a script importing one uses the framework.
    packages: tuple[str, ...] = ()
    # Its own folder in the run directory (logs, checkpoints), if it has one.
    folder: str | None = None
    lens = LensFacts()
    # Modules a debug job imports before debugpy starts (its tracing makes imports slow),
    # when the script mentions ``packages[0]``.
    debug_imports: tuple[str, ...] = ()
    # (module, function) of CUDA checks the framework caches once asked: forgotten when
    # the CUDA stand-in starts and ends (``quickdev.limits.device.availability``).
    cached_cuda_checks: tuple[tuple[str, str], ...] = ()

    def install(self, limits: Limits) -> None:
        """Limit the framework when (and if) the script imports it: patch on import, with
        ``limits.when_imported``, so a script that never uses it never pays for it."""
        raise NotImplementedError

    def folder_in(self, run_dir: Path) -> Path:
        """This framework's folder in ``run_dir`` (absolute)."""
        assert self.folder is not None, f"{self.name} has no folder of its own"
        return Path(os.path.abspath(run_dir)) / self.folder


def library_epochs(limits: Limits, setting: str, planned: int | None, library: str) -> int | None:
    """How many epochs a framework's own epoch loop runs: the script's ``planned`` count
    (its ``setting``: ``NeuralNetClassifier.max_epochs``), at most the train_passes
    budget, as a hand-written epoch loop gets. The result says it in one line naming the
    loop's owner and its knob; a count kept above one is said too (an epochs option given
    on the command line raised the budget)."""
    passes = limits.budget.train_passes
    if planned is None or passes is None or limits.batches is None:
        return planned
    if not limits.budget.batches_bound_training:
        return planned  # the NaN hunt trains for its step budget, over the script's epochs
    whose = f"the epoch loop is {library}'s own; {setting} is its knob"
    if planned > passes:
        limits.setting_changed(f"{setting}: {planned} → {passes} ({whose})")
        return passes
    if planned > 1:
        limits.setting_changed(
            f"{setting}: {planned} kept, the train_passes budget being {passes} ({whose})"
        )
    return planned
