"""The limits seen from inside a script: what the user's code observes under quickdev run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.stand_in import cpu_stand_in

PROBE = """\
import json
import os
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Probe(Dataset):
    def __init__(self):
        self.seen_in_worker = []

    def __len__(self):
        return 40

    def __getitem__(self, index):
        self.seen_in_worker.append(get_worker_info() is not None)
        return torch.full((3,), float(index))


dataset = Probe()
loader = DataLoader(
    dataset,
    batch_size=4,
    num_workers=4,
    persistent_workers=True,
    pin_memory=True,
    prefetch_factor=4,
    multiprocessing_context="spawn",
)
batches = list(loader)
bad = DataLoader(torch.tensor([[1.0, float("nan")], [2.0, 3.0]]), batch_size=1)
for _ in bad:
    pass


def double(x):
    return 2 * x


@torch.compile(mode="max-autotune")
def decorated(x):
    return x + 1


layer = nn.Linear(2, 2).to("cuda:0")
report = {
    "len": len(loader),
    "iterated": len(batches),
    "in_worker": any(dataset.seen_in_worker),
    "compile_identity": torch.compile(double) is double,
    "decorated_plain": decorated.__code__ is not None and decorated(torch.ones(1)).item() == 2.0,
    "cuda_available": torch.cuda.is_available(),
    "cuda_tensor": str(torch.zeros(2).cuda().device),
    "to_cuda_device": str(torch.ones(2).to(torch.device("cuda")).device),
    "module_to_cuda": str(layer.weight.device),
    "argv": sys.argv,
    "path0": sys.path[0],
    "cwd": os.getcwd(),
    "name": __name__,
}
print("PROBE " + json.dumps(report))
"""


@pytest.fixture(scope="module")
def probe(run_quickdev: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("probe")
    scripts = root / "scripts"
    scripts.mkdir()
    (scripts / "probe.py").write_text(PROBE)
    work = root / "work"
    work.mkdir()
    run = run_quickdev("--batches", "3", str(scripts / "probe.py"), "--", "--flag", "x", cwd=work)
    assert run.returncode == 0, run.stderr
    line = next(line for line in run.stdout.splitlines() if line.startswith("PROBE "))
    return run, json.loads(line.removeprefix("PROBE ")), scripts, work


def test_loader_length_agrees_with_limit(probe: Any) -> None:
    _, report, _, _ = probe
    assert report["len"] == 3
    assert report["iterated"] == 3


def test_no_worker_processes(probe: Any) -> None:
    run, report, _, _ = probe
    assert report["in_worker"] is False
    assert run.result["loaders"][0]["batch_signature"] == "float32[4, 3] cpu"


def test_nan_batch_is_flagged(probe: Any) -> None:
    run, _, _, _ = probe
    good, bad = run.result["loaders"]
    assert not good["nonfinite"]
    assert bad["nonfinite"]


def test_torch_compile_is_disabled(probe: Any) -> None:
    _, report, _, _ = probe
    assert report["compile_identity"] is True
    assert report["decorated_plain"] is True


@cpu_stand_in
def test_cuda_calls_land_on_cpu(probe: Any) -> None:
    run, report, _, _ = probe
    assert report["cuda_available"] is True  # told it has one CUDA device, stood in
    assert report["cuda_tensor"] == "cpu"
    assert report["to_cuda_device"] == "cpu"
    assert report["module_to_cuda"] == "cpu"
    assert run.result["limits"]["device"] == "cpu"


def test_script_sees_python_script_environment(probe: Any) -> None:
    _, report, scripts, work = probe
    assert report["argv"] == [str(scripts / "probe.py"), "--flag", "x"]
    assert report["path0"] == str(scripts)
    assert report["cwd"] == str(work)
    assert report["name"] == "__main__"


def test_module_runs_like_python_m(run_quickdev: Any, tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "util.py").write_text("VALUE = 'from util'\n")
    (package / "train.py").write_text(
        "import json, sys\n"
        "from pkg.util import VALUE\n"
        "print('MODULE ' + json.dumps([__name__, sys.argv, sys.path[0], VALUE]))\n"
    )
    run = run_quickdev("-m", "pkg.train", "--", "--lr", "0.1", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    line = next(line for line in run.stdout.splitlines() if line.startswith("MODULE "))
    name, argv, path0, value = json.loads(line.removeprefix("MODULE "))
    assert name == "__main__"
    assert argv == [str(package / "train.py"), "--lr", "0.1"]
    assert path0 == str(tmp_path)
    assert value == "from util"
    assert run.result["script"] == "pkg.train"


PL_SCRIPT = """\
import pytorch_lightning as pl
import torch
from pytorch_lightning.loggers import CSVLogger
from torch.utils.data import DataLoader, TensorDataset


class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val", torch.nn.functional.mse_loss(self.layer(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
trainer = pl.Trainer(
    max_epochs=50,
    logger=CSVLogger("csv_logs"),
    default_root_dir="outputs",
    val_check_interval=10,
    num_sanity_val_steps=2,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(Tiny(), DataLoader(data, batch_size=4), DataLoader(data, batch_size=4))
print("EPOCHS", trainer.current_epoch)
"""


def test_pytorch_lightning_limits_and_logger(run_quickdev: Any, tmp_path: Path) -> None:
    (tmp_path / "pl_train.py").write_text(PL_SCRIPT)
    run = run_quickdev("--batches", "3", str(tmp_path / "pl_train.py"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.result["status"] == "passed"
    assert [(loader["passes"], loader["batches"]) for loader in run.result["loaders"]] == [
        (1, 3),
        (1, 3),
    ]
    assert run.result["optimizer_steps"] == 3
    assert not (tmp_path / "csv_logs").exists()
    (metrics,) = run.run_dir.rglob("metrics.csv")
    assert "loss" in metrics.read_text()
    assert [r["requested"] for r in run.result["outputs"]] == [
        str(tmp_path / "outputs"),
        str(tmp_path / "csv_logs"),
    ]
    assert not (tmp_path / "outputs").exists()


def test_no_limits_runs_every_batch(run_quickdev: Any, tmp_path: Path) -> None:
    (tmp_path / "full.py").write_text(
        "import torch\n"
        "from torch.utils.data import DataLoader\n"
        "loader = DataLoader(torch.arange(50.0), batch_size=5)\n"
        "print('LEN', len(loader), sum(1 for _ in loader))\n"
    )
    run = run_quickdev("--no-limits", str(tmp_path / "full.py"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "LEN 10 10" in run.stdout
    assert run.result["limits"]["batches"] is None
    assert run.result["loaders"][0]["batches"] == 10
