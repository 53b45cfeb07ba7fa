"""Running ``quickdev run`` for real, as a user does, and reading the result it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class QuickdevRun:
    """One finished ``quickdev run --json``: the process and the result it printed."""

    returncode: int
    stdout: str
    stderr: str
    result: dict[str, Any] | None

    @property
    def run_dir(self) -> Path:
        assert self.result is not None, self.stderr
        return Path(self.result["run_dir"])


def quickdev_run(
    *args: str,
    cwd: Path,
    timeout: float = 120,
    json_output: bool = True,
    env: dict[str, str] | None = None,
) -> QuickdevRun:
    """``python -m quickdev run [--json] ARGS`` in ``cwd``; the result from the last stdout line.
    ``env``: variables over this process's environment."""
    command = [sys.executable, "-m", "quickdev", "run", *(["--json"] if json_output else []), *args]
    proc = subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env} if env else None,
    )
    result = None
    lines = proc.stdout.strip().splitlines()
    if json_output and lines and lines[-1].startswith("{"):
        result = json.loads(lines[-1])
    return QuickdevRun(proc.returncode, proc.stdout, proc.stderr, result)
