"""GPU training code run unmodified by ``quickdev run`` on a CPU-only machine.

Each script under device_scripts/ is a small faithful copy of a public idiom; the
result must list what the device engine remapped. The tests marked ``gpu`` run the
same scripts on a CUDA machine, where indices it lacks land on cuda:0; they are
skipped (not passed) without CUDA, and the CPU proofs above them stand alone.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from tests.support.checkpoints import save_as_if_on
from tests.support.stand_in import CUDA, cpu_stand_in, needs_gpu

SCRIPTS = Path(__file__).parent / "device_scripts"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(SCRIPTS, tmp_path, dirs_exist_ok=True)
    return tmp_path


@pytest.fixture
def cuda1_checkpoint(workdir: Path) -> Path:
    torch.manual_seed(0)
    state = {"model": nn.Linear(4, 2).state_dict()}
    path = save_as_if_on(state, workdir / "gpu-run.pt", "cuda:1")
    if not CUDA:
        with pytest.raises(RuntimeError, match="CUDA"):
            torch.load(path)
    return path


def remaps(run: Any) -> dict[str, int]:
    assert run.result is not None, run.stderr
    device = run.result["device"]
    assert device["actual"] == ("cpu" if not CUDA else device["actual"])
    return dict(device["remaps"])


@cpu_stand_in
def test_gpt_script_with_configurator_and_pinned_batches(run_quickdev: Any, workdir: Path) -> None:
    run = run_quickdev(
        "--max-steps", "3", "gpt_train.py", "--", "config/quick.py", "--max_iters=50",
        cwd=workdir,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.result["status"] == "passed" and run.result["optimizer_steps"] == 3
    counts = remaps(run)
    assert counts["Tensor.pin_memory"] >= 4
    assert counts["Tensor.to / Module.to"] >= 4  # model.to("cuda"), batches .to(device)
    # Told it has a CUDA device that supports bfloat16, it asks bfloat16 as on a recent GPU;
    # what that ran in here is measured on this CPU.
    (choice,) = run.result["device"]["autocast"]
    assert choice["asked"] == "cuda bfloat16"
    assert counts[f"autocast cuda bfloat16 -> cpu {choice['ran']}"] == 1
    assert "GradScaler cuda -> cpu" in counts
    assert run.result["device"]["answered"] == {"torch.cuda.is_available": 1}
    assert "mem 0.0 MB" in run.stdout
    assert "device: cpu instead of" not in run.stderr  # --json: the summary is the JSON


@cpu_stand_in
def test_an_asked_float32_stays_float32_and_the_result_says_what_ran(
    run_quickdev: Any, workdir: Path
) -> None:
    """nanoGPT's ``--dtype=float32``: autocast off, not bfloat16; torch.compile off, said so
    (the script's own "compiling the model..." print notwithstanding)."""
    run = run_quickdev(
        "--max-steps", "2", "gpt_train.py", "--", "config/quick.py", "--dtype=float32",
        cwd=workdir, json_output=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    run_dir = next(line for line in run.stderr.splitlines() if "run dir:" in line).split(": ")[1]
    result = json.loads((workdir / run_dir / "result.json").read_text())
    assert result["device"]["autocast"] == [
        {"asked": "cuda float32", "ran": "float32", "why": "the script asked for float32"}
    ]
    assert (
        "torch.compile: on → off (the model runs eagerly)" in result["limits"]["settings_changed"]
    )
    summary = run.stderr
    assert "autocast: cuda float32 regions ran in float32 (autocast off)" in summary
    assert "torch.compile: on → off" in summary


@cpu_stand_in
def test_trainer_with_integer_gpu_id_resumes_its_snapshot(run_quickdev: Any, workdir: Path) -> None:
    snapshot = {"MODEL_STATE": nn.Linear(20, 1).state_dict(), "EPOCHS_RUN": 1}
    save_as_if_on(snapshot, workdir / "snapshot.pt", "cuda:0")
    before = (workdir / "snapshot.pt").read_bytes()
    run = run_quickdev("trainer_snapshot.py", cwd=workdir, json_output=False)
    assert run.returncode == 0, run.stderr
    assert "Resuming training from snapshot at Epoch 1" in run.stdout
    assert "[GPU0] Epoch 1 | snapshot saved" in run.stdout
    summary = next(line for line in run.stderr.splitlines() if line.startswith("  device:"))
    assert "Tensor.to / Module.to" in summary and "torch.load map_location" in summary
    assert (workdir / "snapshot.pt").read_bytes() == before  # new ones stay in the run dir


@cpu_stand_in
def test_torchrun_script_with_nccl_and_set_device(run_quickdev: Any, workdir: Path) -> None:
    run = run_quickdev("--nproc", "2", "torchrun_ddp.py", cwd=workdir, timeout=240)
    assert run.returncode == 0, run.stderr
    # Its 100 epochs end at the one-epoch budget, in both ranks, and the script finishes.
    assert (run.result["status"], run.result["stop_reason"]) == ("passed", "completed"), run.result[
        "error"
    ]
    assert [e["role"] for e in run.result["loops_ended"]] == ["epoch"]
    assert [r["status"] for r in run.result["ranks"]] == ["passed", "passed"]
    assert "[GPU1] epoch 0 done on cpu" in run.stdout
    counts = remaps(run)
    assert counts["init_process_group nccl -> gloo"] == 1
    assert counts["torch.cuda.set_device"] == 1
    assert counts["DistributedDataParallel device_ids"] == 1
    assert counts["barrier device_ids"] >= 1


@cpu_stand_in
def test_autocast_and_grad_scaler(run_quickdev: Any, workdir: Path) -> None:
    run = run_quickdev("--max-steps", "2", "amp_step.py", cwd=workdir)
    assert run.returncode == 0, run.stderr
    # The region ran in what is fast on this CPU, and the result says which and why.
    (choice,) = run.result["device"]["autocast"]
    assert choice["asked"] == "cuda float16" and choice["why"]
    assert f"out torch.{choice['ran']}" in run.stdout
    counts = remaps(run)
    assert counts[f"autocast cuda float16 -> cpu {choice['ran']}"] == 2
    assert counts["GradScaler cuda -> cpu"] == 1
    assert counts["Tensor.cuda / Module.cuda"] >= 2  # one per parameter of two layers
    # The loss as the script computes it, not GradScaler's 65536-fold backward input.
    assert len(run.result["losses"]) == 2
    assert all(0 < loss < 10 for loss in run.result["losses"]), run.result["losses"]


@cpu_stand_in
def test_checkpoint_saved_on_cuda1(
    run_quickdev: Any, workdir: Path, cuda1_checkpoint: Path
) -> None:
    run = run_quickdev("load_checkpoint.py", "--", str(cuda1_checkpoint), cwd=workdir)
    assert run.returncode == 0, run.stderr
    assert "LOADED ['cpu']" in run.stdout
    counts = remaps(run)
    assert counts["torch.load map_location"] == 2  # "cuda:1" and the dict's "cuda:0"
    assert counts["torch.load storage location"] >= 2  # the unmapped load, per storage


@needs_gpu
def test_gpu_checkpoint_from_a_missing_index_lands_on_cuda0(
    run_quickdev: Any, workdir: Path
) -> None:
    missing = torch.cuda.device_count()  # an index this machine does not have
    state = {"model": nn.Linear(4, 2).state_dict()}
    path = save_as_if_on(state, workdir / "far.pt", f"cuda:{missing}")
    script = workdir / "load_checkpoint.py"
    script.write_text(script.read_text().replace("cuda:1", f"cuda:{missing}"))
    run = run_quickdev("--device", "auto", "load_checkpoint.py", "--", str(path), cwd=workdir)
    assert run.returncode == 0, run.stderr
    assert "LOADED ['cuda']" in run.stdout
    assert run.result["device"]["actual"] == "cuda:0"
    assert run.result["device"]["remaps"]["torch.load map_location"] >= 1


CPU_ONLY_SCRIPT = """
import time, torch
torch.ones(3) * 2
time.sleep(1.5)  # the resource sampler ticks every 0.5 s meanwhile
print("cuda initialized:", torch.cuda.is_initialized())
"""


@needs_gpu
def test_a_cpu_only_job_on_a_gpu_machine_creates_no_cuda_context(
    run_quickdev: Any, tmp_path: Path
) -> None:
    """Quickdev's own observers must not start CUDA: seconds and GPU memory the script did
    not ask for."""
    (tmp_path / "cpu_only.py").write_text(CPU_ONLY_SCRIPT)
    run = run_quickdev("cpu_only.py", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "cuda initialized: False" in run.stdout, run.stdout


@needs_gpu
def test_gpu_pinned_device_flag_maps_every_index(run_quickdev: Any, workdir: Path) -> None:
    run = run_quickdev("--device", "cuda:0", "--max-steps", "2", "amp_step.py", cwd=workdir)
    assert run.returncode == 0, run.stderr
    device = run.result["device"]
    assert (device["requested"], device["actual"], device["remaps"]) == ("cuda:0", "cuda:0", {})
    assert (device["answered"], device["autocast"]) == ({}, [])  # nothing stood in


@pytest.fixture
def layer_saved_on_cuda1(workdir: Path) -> Path:
    torch.manual_seed(0)
    return save_as_if_on({"layer": nn.Linear(32, 64).state_dict()}, workdir / "layer.pt", "cuda:1")


def printed(run: Any, tag: str) -> list[str]:
    """The words after ``tag`` on the line the script printed with it."""
    line = next((ln for ln in run.stdout.splitlines() if ln.startswith(f"{tag} ")), None)
    assert line is not None, f"the script printed no {tag} line:\n{run.stdout}\n{run.stderr}"
    return line.split()[1:]


@needs_gpu
def test_a_cuda_script_keeps_its_devices_and_dtypes_on_a_gpu(
    run_quickdev: Any, workdir: Path, layer_saved_on_cuda1: Path
) -> None:
    """On a GPU machine the job runs a CUDA script as written: "cuda" is the GPU, float16
    autocast computes in float16 with a GradScaler; only the indices the machine lacks
    (cuda:3, a checkpoint from cuda:1) land on cuda:0, each counted."""
    gpus = torch.cuda.device_count()
    run = run_quickdev(
        "--max-steps", "2", "as_written.py", "--", str(layer_saved_on_cuda1), cwd=workdir
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.result["status"] == "passed", run.result["error"]
    assert printed(run, "DEVICES") == [
        "cuda:0",
        "cuda:3" if gpus > 3 else "cuda:0",
        "cuda:1" if gpus > 1 else "cuda:0",
    ]
    assert printed(run, "DTYPES") == ["torch.float16", "torch.float32"]
    remapped = {}
    if gpus <= 3:
        remapped["device= argument"] = 1  # torch.zeros(..., device="cuda:3")
    if gpus <= 1:
        remapped["torch.load storage location"] = 2  # the layer's weight and bias
    assert run.result["device"] == {
        "requested": "auto",
        "actual": "cuda:0",
        "remaps": remapped,
        "answered": {},
        "autocast": [],
        "cuda_devices": gpus,
        "needed": {},
        "declined": {},
    }


@cpu_stand_in
def test_the_same_cuda_script_stands_in_on_the_cpu(
    run_quickdev: Any, workdir: Path, layer_saved_on_cuda1: Path
) -> None:
    run = run_quickdev(
        "--max-steps", "2", "as_written.py", "--", str(layer_saved_on_cuda1), cwd=workdir
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.result["status"] == "passed", run.result["error"]
    assert printed(run, "DEVICES") == ["cpu", "cpu", "cpu"]
    (choice,) = run.result["device"]["autocast"]
    assert choice["asked"] == "cuda float16"
    assert printed(run, "DTYPES") == [f"torch.{choice['ran']}", "torch.float32"]
    counts = remaps(run)
    assert counts["torch.load storage location"] == 2 and counts["GradScaler cuda -> cpu"] == 1


def test_mps_only_call_fails_in_one_line(run_quickdev: Any, tmp_path: Path) -> None:
    if torch.backends.mps.is_available():
        pytest.skip("this machine has MPS, so the call is legitimate")
    (tmp_path / "mps.py").write_text("import torch\nx = torch.ones(2)\ntorch.mps.synchronize()\n")
    run = run_quickdev("mps.py", cwd=tmp_path, json_output=False)
    assert run.returncode == 1
    (line,) = [ln for ln in run.stderr.splitlines() if ln.startswith("  error:")]
    assert "torch.mps.synchronize()" in line and "--device" in line and "mps.py:3" in line
    # The traceback, as python prints one, ends at the script's call: no frame of the job's.
    traceback = run.stderr[run.stderr.index("Traceback") : run.stderr.index("quickdev: failed")]
    frames = [line for line in traceback.splitlines() if line.strip().startswith("File ")]
    assert frames and all("mps.py" in frame for frame in frames), traceback


def test_custom_cuda_kernel_fails_in_one_line(run_quickdev: Any, tmp_path: Path) -> None:
    if CUDA:
        pytest.skip("with CUDA the kernel would run")
    # A custom op with only a CUDA kernel, as a compiled extension registers it.
    (tmp_path / "ext.py").write_text(
        "import torch\n"
        "lib = torch.library.Library('qd_ext', 'DEF')\n"
        "lib.define('fused(Tensor x) -> Tensor')\n"
        "lib.impl('fused', lambda x: x * 2, 'CUDA')\n"
        "x = torch.ones(2, device='cuda')\n"
        "y = torch.ops.qd_ext.fused(x)\n"
    )
    run = run_quickdev("ext.py", cwd=tmp_path)
    assert run.returncode == 1
    error = run.result["error"]
    assert error["type"] == "DeviceUnavailable"
    assert "qd_ext::fused" in error["message"] and "--device" in error["message"]
    assert (Path(error["file"]).name, error["line"]) == ("ext.py", 6)


# Written on a real GPU machine (an H100) by:
#   torch.manual_seed(0); m = nn.Linear(4, 2).cuda()
#   torch.save({"model": m.state_dict(), "step": 7}, "linear_saved_on_cuda0.pt")
# Its storages carry torch's own "cuda:0" location tags, not ones written by a helper.
REAL_GPU_CHECKPOINT = Path(__file__).parent / "device_checkpoints" / "linear_saved_on_cuda0.pt"
REAL_GPU_WEIGHT_SUM = -0.18697404861450195


@cpu_stand_in
def test_a_checkpoint_written_on_a_real_gpu_loads_on_the_cpu(
    run_quickdev: Any, tmp_path: Path
) -> None:
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.load(REAL_GPU_CHECKPOINT)  # without quickdev: the CPU machine refuses it
    script = tmp_path / "resume.py"
    script.write_text(
        "import sys, torch\n"
        "from torch import nn\n"
        "model = nn.Linear(4, 2).to('cuda')\n"
        "state = torch.load(sys.argv[1], map_location='cuda:0')\n"
        "model.load_state_dict(state['model'])\n"
        "print('RESUMED', next(model.parameters()).device, state['step'],\n"
        "      float(model.weight.detach().sum()))\n"
    )
    run = run_quickdev("resume.py", "--", str(REAL_GPU_CHECKPOINT), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    device, step, total = run.stdout.split("RESUMED ")[1].split()[:3]
    assert (device, step) == ("cpu", "7")
    assert float(total) == pytest.approx(REAL_GPU_WEIGHT_SUM)
    assert remaps(run)["torch.load map_location"] == 1


@cpu_stand_in
def test_default_device_context_and_set_default_device(run_quickdev: Any, workdir: Path) -> None:
    run = run_quickdev("--max-steps", "2", "default_device.py", cwd=workdir)
    assert run.returncode == 0, run.stderr
    assert run.result["status"] == "passed"
    # The line after the training loop runs: every default lands on the CPU.
    assert "DEVICES cpu cpu cpu" in run.stdout
    # meta stays meta (to_empty then maps it); cuda defaults land on the CPU, counted.
    assert remaps(run)["default device (torch.device context)"] == 2


@pytest.mark.parametrize("device", ["cuda:7", "cuda:64"])
def test_a_device_the_machine_lacks_is_a_usage_error(
    run_quickdev: Any, workdir: Path, device: str
) -> None:
    run = run_quickdev("--device", device, "amp_step.py", cwd=workdir, json_output=False)
    assert run.returncode == 2
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith(f"quickdev run: --device {device}:") and "cpu" in line
    assert run.stdout == ""  # the script never ran
