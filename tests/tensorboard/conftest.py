"""A real profiled quick-dev job and a real TensorBoard serving it.

Servers record themselves under $XDG_CACHE_HOME; each test session gets its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from quickdev.tensorboard.manager import TensorBoardServer, ensure_tensorboard, stop_tensorboard

from tests.support.tensorboard import profile_example


@pytest.fixture(scope="session", autouse=True)
def own_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        del os.environ["XDG_CACHE_HOME"]
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(scope="session")
def example_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runs directory holding one profiled run of the example, memory included."""
    runs_dir = tmp_path_factory.mktemp("runs")
    profile_example(runs_dir, "example", "--profile-memory")
    return runs_dir


@pytest.fixture(scope="session")
def example_run_name(example_runs: Path) -> str:
    (run_dir,) = [p for p in example_runs.iterdir() if p.is_dir()]
    return run_dir.name


@pytest.fixture(scope="session")
def example_server(example_runs: Path) -> Iterator[TensorBoardServer]:
    server = ensure_tensorboard(example_runs)
    yield server
    stop_tensorboard(example_runs)


@pytest.fixture
def fresh_logdir(tmp_path: Path) -> Iterator[Path]:
    """An empty logdir whose server, if a test starts one, is stopped afterwards."""
    logdir = tmp_path / "runs"
    logdir.mkdir()
    yield logdir
    stop_tensorboard(logdir)
