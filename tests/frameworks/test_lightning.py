"""Lightning's Trainer gets fast_dev_run's limits with its outputs kept in the run dir."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import pytest
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from quickdev.events import EventHub
from quickdev.frameworks.lightning import Lightning, LightningLimits
from quickdev.limits.adapters import AdapterLimits
from quickdev.limits.outputs import OutputPlacer
from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder

from tests.support.budgets import make_budget

TRAINER_MODULE = "lightning.pytorch.trainer.trainer"
LIGHTNING_DIR = Lightning.folder


def job_side(
    run_dir: Path,
    batches: int | None = 2,
    max_steps: int | None = None,
    cpu_only: bool = True,
    patcher: Patcher | None = None,
) -> AdapterLimits:
    """What a job hands the framework adapters."""
    budget = make_budget(max_steps=max_steps, timeout_s=None)
    recorder = Recorder(EventHub(), budget)
    placer = OutputPlacer(run_dir, recorder, keep_outputs=False)
    return AdapterLimits(patcher or Patcher(), placer, budget, batches, cpu_only)


def limits(
    run_dir: Path, batches: int | None = 2, max_steps: int | None = None, cpu_only: bool = True
) -> LightningLimits:
    side = job_side(run_dir, batches, max_steps, cpu_only)
    return LightningLimits(side, Lightning().folder_in(run_dir))


def recorder_of(side: AdapterLimits) -> Recorder:
    return side.placer.recorder


def test_the_trainer_gets_the_batch_limits_in_place_of_fast_dev_run(tmp_path: Path) -> None:
    lim = limits(tmp_path / "run")
    kwargs = lim.trainer_kwargs({"fast_dev_run": True, "max_epochs": 100, "min_epochs": 5})
    assert "fast_dev_run" not in kwargs
    assert kwargs["default_root_dir"] == str(tmp_path / "run" / LIGHTNING_DIR)
    for split in ("train", "val", "test", "predict"):
        assert kwargs[f"limit_{split}_batches"] == 2
    assert (kwargs["max_epochs"], kwargs["min_epochs"], kwargs["num_sanity_val_steps"]) == (
        1,
        None,
        0,
    )
    assert kwargs["log_every_n_steps"] == 2


def test_without_limits_only_the_root_moves(tmp_path: Path) -> None:
    kwargs = limits(tmp_path / "run", batches=None).trainer_kwargs({"max_epochs": 100})
    assert kwargs["max_epochs"] == 100
    assert "limit_train_batches" not in kwargs


@pytest.mark.parametrize(("user_max", "expected"), [(None, 3), (-1, 3), (10, 3), (1, 1)])
def test_the_step_budget_is_handed_to_the_trainer_below_the_users_own(
    tmp_path: Path, user_max: int | None, expected: int
) -> None:
    lim = limits(tmp_path / "run", batches=5, max_steps=3)
    user = {} if user_max is None else {"max_steps": user_max}
    kwargs = lim.trainer_kwargs(user)
    assert kwargs["max_steps"] == expected
    assert kwargs["limit_train_batches"] == expected
    # The trainer ends at the budget itself; the step hook must not cut it short.
    assert lim.budget.step_budget_reached(3, None) is None


@pytest.mark.parametrize(
    ("precision", "expected"), [("16-mixed", "bf16-mixed"), (16, "bf16-mixed"), ("32", "32")]
)
def test_on_cpu_the_trainer_runs_on_one_cpu_with_a_precision_it_has(
    tmp_path: Path, precision: object, expected: str
) -> None:
    kwargs = limits(tmp_path / "run").trainer_kwargs(
        {"accelerator": "gpu", "devices": 4, "strategy": "ddp", "precision": precision}
    )
    assert (kwargs["accelerator"], kwargs["devices"], kwargs["strategy"]) == ("cpu", 1, "auto")
    assert str(kwargs["precision"]) == expected


def test_a_root_outside_the_run_dir_is_recorded_as_redirected(tmp_path: Path) -> None:
    lim = limits(tmp_path / "run")
    lim.trainer_kwargs({"default_root_dir": str(tmp_path / "mine")})
    assert [(r.requested, r.written) for r in recorder_of(lim.limits).outputs] == [
        (str(tmp_path / "mine"), str(tmp_path / "run" / LIGHTNING_DIR))
    ]


def test_a_patched_trainer_keeps_checkpoints_and_logs_in_the_run_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    trainer_cls = pl.Trainer
    originals = {name: vars(trainer_cls)[name] for name in ("__init__", "save_checkpoint")}
    patcher = Patcher()
    side = job_side(tmp_path / "run", patcher=patcher)
    Lightning().install(side)
    try:
        assert pl.Trainer.__init__ is not originals["__init__"]
        trainer = pl.Trainer(
            max_epochs=10,
            precision="bf16-mixed",
            callbacks=[ModelCheckpoint(dirpath=tmp_path / "ckpts")],
            logger=CSVLogger(save_dir=tmp_path / "logs"),
            enable_progress_bar=False,
            enable_model_summary=False,
        )
    finally:
        patcher.undo_all()
    # The script's settings the job replaced are recorded; one it kept (precision) is not.
    assert recorder_of(side).settings_changed == ["Trainer.max_epochs: 10 → 1"]
    root = tmp_path / "run" / LIGHTNING_DIR
    assert trainer.limit_train_batches == 2
    assert trainer.checkpoint_callback is not None
    assert trainer.checkpoint_callback.dirpath == str(root / "checkpoints" / "ckpts")
    assert trainer.logger is not None
    assert trainer.logger.save_dir == str(root / "logs" / "logs")
    assert {name: vars(trainer_cls)[name] for name in originals} == originals
    assert pl.Trainer.__init__ is originals["__init__"]


@pytest.fixture
def trainer_not_imported() -> Iterator[Any]:
    """The Trainer's module as if the script had not imported it yet; put back afterwards."""
    original = importlib.import_module(TRAINER_MODULE)  # its dependencies load once
    parent = sys.modules[TRAINER_MODULE.rpartition(".")[0]]
    del sys.modules[TRAINER_MODULE]
    yield original
    sys.modules[TRAINER_MODULE] = original
    parent.trainer = original  # type: ignore[attr-defined]


def test_the_import_hook_patches_a_trainer_imported_later_and_undo_removes_it(
    tmp_path: Path, trainer_not_imported: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    meta_path = list(sys.meta_path)
    patcher = Patcher()
    Lightning().install(job_side(tmp_path / "run", patcher=patcher))
    try:
        fresh = importlib.import_module(TRAINER_MODULE)
        assert fresh is not trainer_not_imported  # imported after install, not patched in place
        lightnings_init = vars(fresh.Trainer)["__init__"].__wrapped__
        trainer = fresh.Trainer(enable_progress_bar=False, enable_model_summary=False)
        assert trainer.limit_train_batches == 2
        assert trainer.default_root_dir == os.fspath(tmp_path / "run" / LIGHTNING_DIR)
    finally:
        patcher.undo_all()
    assert sys.meta_path == meta_path
    assert vars(fresh.Trainer)["__init__"] is lightnings_init
    # Imported after undo, the Trainer is Lightning's own again.
    del sys.modules[TRAINER_MODULE]
    again = importlib.import_module(TRAINER_MODULE)
    trainer = again.Trainer(enable_progress_bar=False, enable_model_summary=False)
    assert trainer.limit_train_batches == 1.0
    assert trainer.default_root_dir == os.fspath(tmp_path)
