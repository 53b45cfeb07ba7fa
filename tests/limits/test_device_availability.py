"""Under the CUDA stand-in a script is told it has one CUDA device: scripts that insist on
CUDA run on this CPU machine with default flags, frameworks' checks agree, and a script
that only prefers CUDA takes its CUDA path to the same outcome as its CPU path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import torch
from quickdev.rundir.changes import changes
from quickdev.rundir.result import JobResult

from tests.support.stand_in import cpu_stand_in

# timm's train.py idiom (utils/distributed.py): insist, then name the device.
INSISTS = """
import torch
from torch import nn

assert torch.cuda.is_available(), "CUDA is not available but cuda was specified."
assert torch.cuda.device_count() >= 1
assert torch.backends.cudnn.is_available()
torch.backends.cudnn.benchmark = True
device = torch.device("cuda")
model = nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
loss.backward()
optimizer.step()
# torch's own code is told the truth: DataParallel over no devices is the module itself.
print("parallel", nn.DataParallel(model)(torch.randn(2, 4, device=device)).shape)
print("trained on", next(model.parameters()).device.type, "as", device)
"""

# The frameworks' own checks, and accelerate's device and fp16 mixed precision, which
# it refuses without a GPU.
FRAMEWORKS = """
import torch
from torch import nn
from accelerate import Accelerator
from accelerate.utils import is_cuda_available
from lightning.fabric.accelerators.cuda import num_cuda_devices
from lightning.pytorch.accelerators import CUDAAccelerator
from transformers.utils import is_torch_cuda_available

assert CUDAAccelerator.is_available() and num_cuda_devices() == 1, "Lightning"
assert is_cuda_available(), "accelerate"
assert is_torch_cuda_available(), "transformers"
accelerator = Accelerator(mixed_precision="fp16")
net = nn.Linear(4, 1)
model, optimizer = accelerator.prepare(net, torch.optim.SGD(net.parameters(), lr=0.1))
with accelerator.autocast():
    loss = model(torch.randn(8, 4, device=accelerator.device)).pow(2).mean()
accelerator.backward(loss)
optimizer.step()  # it trains: a script that built an optimizer and never stepped fails
print("accelerate on", accelerator.device, accelerator.mixed_precision)
"""

# pytorch/examples' mnist idiom, and the AMP recipe's: CUDA when there is one.
PREFERS = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

use_cuda = torch.cuda.is_available()
device = torch.device("cuda" if use_cuda else "cpu")
torch.manual_seed(0)
data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
kwargs = {"num_workers": 1, "pin_memory": True} if use_cuda else {}
loader = DataLoader(data, batch_size=8, **kwargs)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
model = model.cuda() if use_cuda else model.to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.cuda.amp.GradScaler(enabled=use_cuda)
for x, y in loader:
    if use_cuda:
        x = x.pin_memory()
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    optimizer.zero_grad()
    with torch.cuda.amp.autocast(enabled=use_cuda):
        loss = nn.functional.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    print("loss", loss.item())
torch.save({"model": model.state_dict(), "scaler": scaler.state_dict()}, "checkpoint.pt")
print("path", device.type)
"""


def _quickdev(run_quickdev: Any, folder: Path, source: str, *args: str) -> Any:
    folder.mkdir(exist_ok=True)
    (folder / "train.py").write_text(source)
    run = run_quickdev("--runs-dir", str(folder.parent / "runs"), *args, "train.py", cwd=folder)
    assert run.returncode == 0, run.stderr
    assert run.result is not None and run.result["status"] == "passed", run.result
    return run


@cpu_stand_in
def test_a_script_that_insists_on_cuda_runs_with_default_flags(
    run_quickdev: Any, tmp_path: Path
) -> None:
    run = _quickdev(run_quickdev, tmp_path / "project", INSISTS)
    assert "trained on cpu as cuda" in run.stdout
    assert "parallel torch.Size([2, 2])" in run.stdout
    device = run.result["device"]
    assert device["actual"] == "cpu"
    assert device["answered"] == {
        "torch.cuda.is_available": 1,
        "torch.cuda.device_count": 1,
        "torch.backends.cudnn.is_available": 1,
    }
    assert run.result["optimizer_steps"] == 1
    said = changes(JobResult.from_dict(run.result))
    # Counts of questions, not answers: none reads like a return value.
    assert (
        "cuda: torch.cuda.is_available() (asked once), torch.cuda.device_count() (asked once), "
        "torch.backends.cudnn.is_available() (asked once) answered as on a machine with one "
        "CUDA device, stood in on the cpu"
    ) in said


def test_device_cpu_keeps_the_stand_in(run_quickdev: Any, tmp_path: Path) -> None:
    # Also on a GPU machine: the job runs on the CPU and the script still has its CUDA.
    run = _quickdev(run_quickdev, tmp_path / "project", INSISTS, "--device", "cpu")
    assert "trained on cpu as cuda" in run.stdout
    assert run.result["device"]["answered"]["torch.cuda.is_available"] == 1


@cpu_stand_in
def test_frameworks_checks_agree_and_accelerate_runs_fp16(
    run_quickdev: Any, tmp_path: Path
) -> None:
    run = _quickdev(run_quickdev, tmp_path / "project", FRAMEWORKS)
    assert "accelerate on cuda fp16" in run.stdout
    remaps = run.result["device"]["remaps"]
    # What float16 ran in here is measured on this CPU (limits/device/autocast.py).
    (choice,) = run.result["device"]["autocast"]
    assert remaps[f"autocast cuda float16 -> cpu {choice['ran']}"] >= 1
    assert remaps["GradScaler cuda -> cpu"] == 1


@cpu_stand_in
def test_a_script_that_prefers_cuda_reaches_the_same_outcome_on_its_cuda_path(
    run_quickdev: Any, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "train.py").write_text(PREFERS)
    by_python = subprocess.run(
        [sys.executable, "train.py"], cwd=plain, capture_output=True, text=True, timeout=120
    )
    assert by_python.returncode == 0, by_python.stderr
    assert "path cpu" in by_python.stdout

    run = _quickdev(run_quickdev, tmp_path / "project", PREFERS)
    assert "path cuda" in run.stdout  # the CUDA path ran: pinned memory, AMP, .cuda()
    remaps = run.result["device"]["remaps"]
    for idiom in ("Tensor.pin_memory", "Tensor.cuda / Module.cuda", "GradScaler cuda -> cpu"):
        assert remaps[idiom] >= 1, (idiom, remaps)
    (choice,) = run.result["device"]["autocast"]
    assert remaps[f"autocast cuda float16 -> cpu {choice['ran']}"] >= 2
    assert run.result["device"]["answered"] == {"torch.cuda.is_available": 1}
    # The same outcome: both batches trained, finite losses, and a checkpoint that loads
    # on a CPU-only machine with the same tensors as the CPU path's.
    assert run.result["optimizer_steps"] == 2 == by_python.stdout.count("loss ")
    assert all(loss == loss and abs(loss) < 1e3 for loss in run.result["losses"])
    (kept,) = [o["written"] for o in run.result["outputs"] if o["requested"].endswith(".pt")]
    cuda_path = torch.load(kept, map_location=None)
    cpu_path = torch.load(plain / "checkpoint.pt")
    assert cuda_path["model"].keys() == cpu_path["model"].keys()
    for name, tensor in cuda_path["model"].items():
        reference = cpu_path["model"][name]
        assert (tensor.device.type, tensor.dtype, tensor.shape) == (
            "cpu",
            reference.dtype,
            reference.shape,
        )
    assert cuda_path["scaler"]["scale"] > 0  # its AMP state, for the GPU run to resume
