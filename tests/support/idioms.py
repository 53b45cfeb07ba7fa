"""The training-code idioms under ``tests/job/idioms``, run with default flags in a copy of
their folder, as a new user would: each run must leave that folder as it was."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from tests.support.paths import REPO

IDIOMS = REPO / "tests" / "job" / "idioms"
# A default-flag run must end in seconds; the idioms' own loops would take minutes.
RUN_DEADLINE_S = 30


def tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and modification time."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def copy_idioms(tmp_path: Path) -> Path:
    """A copy of the idioms in a folder of their own; runs go to a sibling folder."""
    folder = tmp_path / "project"
    shutil.copytree(IDIOMS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def run_idiom(
    run_quickdev: Any,
    project: Path,
    script: str,
    *options: str,
    script_args: tuple[str, ...] = (),
    deadline_s: float = RUN_DEADLINE_S,
    env: dict[str, str] | None = None,
) -> Any:
    """``quickdev run --json [OPTIONS] SCRIPT [SCRIPT_ARGS]`` in ``project``; checks it ended
    in time, left the folder as it was and printed a result. Returns the run. ``env``:
    variables over this process's environment (a ``PYTHONPATH`` to libraries)."""
    before = tree(project)
    started = time.monotonic()
    run = run_quickdev(
        "--runs-dir",
        str(project.parent / "runs"),
        *options,
        str(project / script),
        *script_args,
        cwd=project,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    assert time.monotonic() - started < deadline_s, "a default-flag run must end in seconds"
    assert tree(project) == before, "the run wrote into the script's folder"
    assert run.result is not None, run.stderr
    return run
