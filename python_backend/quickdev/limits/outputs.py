"""Folders that frameworks write logs and checkpoints into, placed in the run directory.

The file journal (``quickdev.limits.journal``) keeps the user's tree as it was whatever
the job writes. The directories a framework is told about up front (Lightning's root,
its loggers and checkpoint callbacks, Hugging Face's ``output_dir``) are moved into the
run directory before anything is written there, so TensorBoard lists their logs while
the job runs and the result names where they went. With ``--keep-outputs`` nothing moves.
"""

from __future__ import annotations

import os
from pathlib import Path

from quickdev.limits.recorder import Recorder


class OutputPlacer:
    def __init__(self, run_dir: Path, recorder: Recorder, keep_outputs: bool) -> None:
        self.run_dir = Path(os.path.abspath(run_dir))
        self.recorder = recorder
        self.keep_outputs = keep_outputs

    def inside(self, path: str | os.PathLike[str]) -> bool:
        return Path(os.path.abspath(path)).is_relative_to(self.run_dir)

    def place(self, requested: str | os.PathLike[str], base: Path) -> Path:
        """Where a folder the script names is written: ``base/<its path relative to the
        cwd>`` (or its absolute path without the anchor), recorded for result.json; the
        folder itself when it is already in the run directory or outputs are kept."""
        wanted = Path(os.path.abspath(requested))
        if self.keep_outputs or wanted.is_relative_to(self.run_dir):
            return wanted
        cwd = Path.cwd()
        relative = (
            wanted.relative_to(cwd)
            if wanted.is_relative_to(cwd)
            else wanted.relative_to(wanted.anchor)
        )
        moved = base / relative
        self.recorder.redirected(str(wanted), str(moved))
        return moved
