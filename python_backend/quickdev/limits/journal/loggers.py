"""Logger stores of plain scripts, pointed into the run directory by their own settings.

W&B and MLflow read their store from the environment, so the job sets it there: W&B
runs offline (``WANDB_MODE``) into ``RUN_DIR/loggers/wandb``, MLflow uses a file store
in ``RUN_DIR/loggers/mlruns``; a quick-dev run never uploads to a tracking server.
Only for a logger that is installed: other libraries read these variables too, and
transformers prints "Running in WANDB offline mode" whenever ``WANDB_MODE`` is offline,
a false first line for a script that cannot use W&B.
TensorBoard's ``SummaryWriter`` and CSV loggers have no such setting: they write
where the script says and the journal moves their files into the run directory.
Lightning's loggers are redirected by ``quickdev.frameworks.lightning``.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from quickdev.limits.patching import Patcher
from quickdev.rundir.layout import LOGGERS_DIR


def environment(run_dir: Path) -> dict[str, str]:
    """The variables of the loggers installed beside the script (none: an empty dict)."""
    store = run_dir / LOGGERS_DIR
    values: dict[str, str] = {}
    if _installed("wandb"):
        values |= {"WANDB_MODE": "offline", "WANDB_DIR": str(store)}
    if _installed("mlflow"):
        values["MLFLOW_TRACKING_URI"] = (store / "mlruns").as_uri()
    return values


def _installed(package: str) -> bool:
    """Whether ``import package`` would find it, without importing it."""
    try:
        return find_spec(package) is not None
    except (ImportError, ValueError):  # a broken or half-imported package
        return False


def install(patcher: Patcher, run_dir: Path) -> None:
    values = environment(run_dir)
    if not values:
        return
    patcher.set_environ(values)
    (run_dir / LOGGERS_DIR).mkdir(exist_ok=True)
