"""Debugger support inside the job process. Interface only, for now.

``start_debugger`` is called by the job after torch and the other heavy modules
are imported (debugpy's tracing makes imports slow) and before the script runs.
It records where it listens in ``RUN_DIR/debugpy.json`` (see run_files.py).
"""

from __future__ import annotations

from pathlib import Path


def start_debugger(listen: tuple[str, int], wait_for_client: bool, run_dir: Path) -> None:
    raise NotImplementedError("debugpy support is not written yet")
