"""Optional Python-level profile (cProfile), like Lightning's "advanced" profiler."""

from __future__ import annotations

import cProfile
from pathlib import Path

from quickdev.rundir.layout import PY_PROFILE_FILE


class PythonProfile:
    """Profiles the thread that starts it (the job's main thread runs the user's script)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / PY_PROFILE_FILE
        self._profiler = cProfile.Profile()
        self._running = False

    def start(self) -> None:
        self._profiler.enable()
        self._running = True

    def stop(self) -> Path:
        """Writes the stats (readable with ``python -m pstats``) and says where."""
        if self._running:
            self._profiler.disable()
            self._running = False
            self._profiler.dump_stats(self.path)
        return self.path
