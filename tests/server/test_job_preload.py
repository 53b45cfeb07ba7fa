"""A job the language server starts has the file interposer from its start: it does not
restart itself for it (an exec, which costs an interpreter's start again), as a job started
from a terminal does once. A --keep-outputs job keeps no journal and gets none."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from quickdev.limits.journal import interposer
from quickdev.server.job_environment import job_environment

# What a job does first (quickdev/__main__.py), after a mark of each start of the process.
STARTS = (
    "open('starts', 'a').write('start\\n'); "
    "from quickdev.limits.journal import interposer; interposer.preload(); "
    "print(interposer.Status.now().writers)"
)


@pytest.fixture
def library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in (interposer.TRIED_ENV, interposer.OFF_ENV, "LD_PRELOAD"):
        monkeypatch.delenv(name, raising=False)
    built = interposer.build()
    if built.library is None:
        pytest.skip(f"the file interposer cannot be built here: {built.why_not}")
    return built.library


def _starts(env: dict[str, str], cwd: Path) -> tuple[str, int]:
    """What the process says of its writers, and how many times it started."""
    (cwd / "starts").unlink(missing_ok=True)
    proc = subprocess.run(
        [sys.executable, "-c", STARTS], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip(), len((cwd / "starts").read_text().splitlines())


def test_a_job_the_server_starts_is_interposed_without_a_restart(
    library: str, tmp_path: Path
) -> None:
    # On its own, a job restarts once to preload the library.
    assert _starts(dict(os.environ), tmp_path) == (interposer.INTERPOSED, 2)
    env = job_environment()
    assert env["LD_PRELOAD"].split(":")[0] == library
    assert _starts(env, tmp_path) == (interposer.INTERPOSED, 1)


def test_a_job_that_keeps_no_journal_gets_no_interposer(library: str) -> None:
    env = job_environment(journal=False)
    assert interposer.TRIED_ENV not in env
    assert library not in env.get("LD_PRELOAD", "")


def test_switched_off_it_is_not_preloaded(
    library: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(interposer.OFF_ENV, "1")
    env = job_environment()
    assert library not in env.get("LD_PRELOAD", "")
    writers, starts = _starts(env, tmp_path)
    assert (writers.startswith("Python code"), starts) == (True, 1)
