"""Fixtures every test package shares; the helpers behind them live in ``tests.support``."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import quickdev_run
from tests.support.paths import EXAMPLES


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    return EXAMPLES


@pytest.fixture(scope="session")
def run_quickdev() -> Any:
    """The ``quickdev_run`` function, for tests and module-scoped fixtures."""
    return quickdev_run


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts; whatever is still running at the end is killed."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
