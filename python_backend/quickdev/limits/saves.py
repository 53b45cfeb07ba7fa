"""``torch.save`` into the run directory: the user's own files are never overwritten.

A file the script saves outside the run directory is written to
``RUN_DIR/outputs/<path relative to the cwd>`` instead; loading that path later in
the same job reads the redirected file, so save-then-load scripts still work.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder
from quickdev.rundir.layout import OUTPUTS_DIR


class SaveRedirector:
    def __init__(self, run_dir: Path, recorder: Recorder) -> None:
        self.run_dir = Path(os.path.abspath(run_dir))
        self.recorder = recorder
        self._written: dict[str, Path] = {}

    def target_for_save(self, requested: str | os.PathLike[str]) -> Path:
        wanted = Path(os.path.abspath(requested))
        if wanted.is_relative_to(self.run_dir):
            return wanted
        written = self.redirect(wanted, self.run_dir / OUTPUTS_DIR)
        written.parent.mkdir(parents=True, exist_ok=True)
        self._written[str(wanted)] = written
        return written

    def redirect(self, requested: str | os.PathLike[str], base: Path) -> Path:
        """Where ``requested`` goes under ``base``: its path relative to the cwd, or its
        absolute path without the anchor; recorded for result.json."""
        wanted = Path(os.path.abspath(requested))
        cwd = Path.cwd()
        relative = wanted.relative_to(cwd) if wanted.is_relative_to(cwd) else _strip_anchor(wanted)
        written = base / relative
        self.recorder.redirected(str(wanted), str(written))
        return written

    def target_for_load(self, requested: str | os.PathLike[str]) -> Path | None:
        return self._written.get(os.path.abspath(requested))


def _strip_anchor(path: Path) -> Path:
    return Path(*path.parts[1:]) if path.anchor else path


def _is_path(f: Any) -> bool:
    return isinstance(f, (str, os.PathLike))


def install(patcher: Patcher, redirector: SaveRedirector) -> None:
    """Wraps the ``torch.save``/``torch.load`` there are now: install the device mapping
    first, so a redirected load still maps its tensors (see ``install_limits``)."""
    original_save = torch.save
    original_load = torch.load

    def save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> None:
        if _is_path(f):
            f = redirector.target_for_save(f)
        original_save(obj, f, *args, **kwargs)

    def load(f: Any, *args: Any, **kwargs: Any) -> Any:
        if _is_path(f):
            f = redirector.target_for_load(f) or f
        return original_load(f, *args, **kwargs)

    patcher.set(torch, "save", save)
    patcher.set(torch, "load", load)
