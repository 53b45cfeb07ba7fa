"""The logger stores a job points into its run directory: only for loggers that are installed.

Setting W&B's variables for a script that cannot use W&B changes what other libraries say:
transformers prints "[INFO] Running in WANDB offline mode" as its first line whenever
WANDB_MODE is offline, although nothing runs W&B.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import quickdev
import torch

VARIABLES = ("WANDB_MODE", "WANDB_DIR", "MLFLOW_TRACKING_URI")


def _job_seeing(seen: dict[str, str | None]) -> Callable[[], None]:
    def job() -> None:
        seen.update({name: os.environ.get(name) for name in VARIABLES})
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(1, 2)).sum().backward()
        optimizer.step()

    return job


@pytest.fixture
def clean_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_no_logger_variables_where_no_logger_is_installed(clean_environment: Path) -> None:
    from importlib.util import find_spec

    if find_spec("wandb") or find_spec("mlflow"):
        pytest.skip("wandb or mlflow is installed in this environment")
    seen: dict[str, str | None] = {}
    result = quickdev.run(_job_seeing(seen))
    assert result.status == "passed"
    assert seen == dict.fromkeys(VARIABLES)


def test_an_installed_wandb_runs_offline_into_the_run_directory(
    clean_environment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A package named wandb on the path stands in for an installed W&B (the real one is
    # not a dependency of the project): the job only asks whether it can be imported.
    site = clean_environment / "site"
    (site / "wandb").mkdir(parents=True)
    (site / "wandb" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    seen: dict[str, str | None] = {}
    result = quickdev.run(_job_seeing(seen))
    assert result.status == "passed"
    assert seen["WANDB_MODE"] == "offline"
    assert seen["WANDB_DIR"] is not None
    assert Path(seen["WANDB_DIR"]).is_relative_to(Path(result.run_dir))
    assert os.environ.get("WANDB_MODE") is None  # put back after the job
