"""Fixtures every test package shares; the helpers behind them live in ``tests.support``."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import quickdev_run
from tests.support.paths import EXAMPLES

# A run given a few minutes on a borrowed machine (tools/gpu/check.sh) says when to stop
# starting tests (seconds since the epoch): the rest are skipped, each saying why, and the
# session ends with its summary instead of being killed mid-test.
DEADLINE_ENV = "QUICKDEV_TEST_DEADLINE"


def pytest_runtest_setup(item: pytest.Item) -> None:
    deadline = os.environ.get(DEADLINE_ENV)
    if deadline and time.time() > float(deadline):
        pytest.skip(f"not started: the run's deadline passed ({DEADLINE_ENV})")


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
