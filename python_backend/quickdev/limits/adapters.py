"""The job's side of the framework adapters (``quickdev.frameworks``): what each is handed
to limit its framework, and their installation in one call."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from quickdev.frameworks import FRAMEWORKS
from quickdev.limits.budget import Budget
from quickdev.limits.import_hook import when_imported
from quickdev.limits.outputs import OutputPlacer
from quickdev.limits.patching import Patcher


class AdapterLimits:
    """``quickdev.frameworks.Limits``, from the job's patcher, budget and output placer."""

    def __init__(
        self,
        patcher: Patcher,
        placer: OutputPlacer,
        budget: Budget,
        batches: int | None,
        cpu_only: bool,
    ) -> None:
        self.patcher = patcher
        self.placer = placer
        self.budget = budget
        self.batches = batches
        self.cpu_only = cpu_only
        self.run_dir = placer.run_dir
        self.keep_outputs = placer.keep_outputs

    def when_imported(self, modules: Sequence[str], patch: Callable[[ModuleType], None]) -> None:
        when_imported(self.patcher, modules, patch)

    def replace(self, owner: Any, name: str, value: Any) -> Any:
        return self.patcher.set(owner, name, value)

    def inside(self, path: str | os.PathLike[str]) -> bool:
        return self.placer.inside(path)

    def place(self, requested: str | os.PathLike[str], base: Path) -> Path:
        return self.placer.place(requested, base)

    def redirected(self, requested: str, written: str) -> None:
        self.placer.recorder.redirected(requested, written)

    def settings_overridden(
        self, owner: str, before: Mapping[str, Any], after: Mapping[str, Any]
    ) -> None:
        self.placer.recorder.settings_overridden(owner, before, after)

    def setting_changed(self, line: str) -> None:
        self.placer.recorder.setting_changed(line)


def install(limits: AdapterLimits) -> None:
    """Every framework's limits, each patched in when (and if) the script imports it."""
    for framework in FRAMEWORKS:
        framework.install(limits)
