"""Logger stores of plain scripts, pointed into the run directory by their own settings.

W&B and MLflow read their store from the environment, so the job sets it there: W&B
runs offline (``WANDB_MODE``) into ``RUN_DIR/loggers/wandb``, MLflow uses a file store
in ``RUN_DIR/loggers/mlruns``; a quick-dev run never uploads to a tracking server.
TensorBoard's ``SummaryWriter`` and CSV loggers have no such setting: they write
where the script says and the journal moves their files into the run directory.
Lightning's loggers are redirected by ``quickdev.frameworks.lightning``.
"""

from __future__ import annotations

from pathlib import Path

from quickdev.limits.patching import Patcher
from quickdev.rundir.layout import LOGGERS_DIR


def environment(run_dir: Path) -> dict[str, str]:
    store = run_dir / LOGGERS_DIR
    return {
        "WANDB_MODE": "offline",
        "WANDB_DIR": str(store),
        "MLFLOW_TRACKING_URI": (store / "mlruns").as_uri(),
    }


def install(patcher: Patcher, run_dir: Path) -> None:
    values = environment(run_dir)
    patcher.set_environ(values)
    (run_dir / LOGGERS_DIR).mkdir(exist_ok=True)
