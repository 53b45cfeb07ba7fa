"""How the job finds "one training step" in unmodified code for the memory forecast: the
loss's own calls (through GradScaler too), gradient accumulation, a loss that cannot be
replayed, and the job's own counts left alone by the replay."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import quickdev
import torch
from quickdev import problems
from quickdev.events import EventHub
from quickdev.forecast.devices import parse_devices
from quickdev.limits.forecast_capture import StepCapture
from quickdev.limits.recorder import Recorder
from quickdev.rundir.memory import MemoryForecast
from quickdev.rundir.result import JobResult
from quickdev.rundir.verdict import decide
from torch import nn
from torch.nn import functional as F

from tests.support.autocast import FAST_BF16, SLOW_HALF, pin_cpu_autocast
from tests.support.budgets import make_budget
from tests.support.paths import EXAMPLES
from tests.support.stand_in import CUDA


def _run(train: Callable[[], None], tmp_path: Path, batches: int = 2) -> JobResult:
    result = quickdev.run(train, batches, memory_forecast="24", runs_dir=tmp_path / "runs")
    assert result.optimizer_steps >= 1, result.error
    assert result.memory_forecast is not None and result.memory_forecast.error is None
    return result


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU()).cuda()


def _scaled_loss_training(autocast: bool, batch: int = 32) -> Callable[[], None]:
    def train() -> None:
        model = _mlp()
        optimizer = torch.optim.AdamW(model.parameters())
        scaler = torch.amp.GradScaler("cuda")
        for _ in range(2):
            x = torch.randn(batch, 256, device="cuda")
            y = torch.randint(0, 256, (batch,), device="cuda")
            with torch.autocast("cuda", dtype=torch.float16, enabled=autocast):
                loss = F.cross_entropy(model(x), y)
            print(f"loss {loss.item():.3f}")  # a value read between forward and backward
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()

    return train


@pytest.mark.parametrize("cpu_speeds", [FAST_BF16, SLOW_HALF], ids=["bf16-fast", "half-slow"])
def test_a_loss_scaled_for_mixed_precision_is_replayed_in_the_asked_dtype(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpu_speeds: dict[str, float]
) -> None:
    """Whatever this CPU computes the script's CUDA region in (bfloat16, or float32 where
    half precision is slow here), the forecast is of the GPU run: float16 activations."""
    pin_cpu_autocast(monkeypatch, tmp_path / "cache", cpu_speeds)
    # A batch whose activations outweigh autocast's 16-bit copies of the weights.
    forecast = _run(_scaled_loss_training(True, batch=1024), tmp_path).memory_forecast
    assert forecast is not None
    assert forecast.loss.startswith("replayed")
    assert forecast.precision == "float32 weights, autocast float16"
    # The same step with its region off keeps its activations in float32: more of them.
    full = _run(_scaled_loss_training(False, batch=1024), tmp_path).memory_forecast
    assert full is not None and full.precision == "float32 weights"
    assert _activations(forecast) < _activations(full)


def _activations(forecast: MemoryForecast) -> int:
    return sum(module.activations for module in forecast.modules)


def _accumulating(micro_steps: int) -> Callable[[], None]:
    def train() -> None:
        model = _mlp()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            for _ in range(micro_steps):
                x = torch.randn(2048, 256, device="cuda")
                (model(x).pow(2).mean() / micro_steps).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    return train


def test_gradient_accumulation_keeps_every_gradient_through_the_next_micro_step(
    tmp_path: Path,
) -> None:
    single = _run(_accumulating(1), tmp_path).memory_forecast
    accumulating = _run(_accumulating(4), tmp_path).memory_forecast
    assert single is not None and accumulating is not None
    params = single.categories["parameters"]
    assert accumulating.categories["gradients"] == params
    assert single.categories["gradients"] < params
    assert accumulating.peak is not None and single.peak is not None
    assert accumulating.peak > single.peak


def test_a_loss_that_cannot_replay_is_stood_in_for_and_said(tmp_path: Path) -> None:
    def train() -> None:
        model = _mlp()
        optimizer = torch.optim.AdamW(model.parameters())
        for _ in range(2):
            out = model(torch.randn(32, 256, device="cuda"))
            # Boolean indexing: the result's size depends on the values, which fake
            # tensors do not have.
            loss = out[out > 0].sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()

    forecast = _run(train, tmp_path).memory_forecast
    assert forecast is not None and forecast.peak is not None
    assert forecast.loss.startswith("stood in for by a gradient the size of the model's outputs")


def test_the_replay_counts_no_step_and_stops_at_no_budget(tmp_path: Path) -> None:
    def train() -> None:
        model = _mlp()
        optimizer = torch.optim.AdamW(model.parameters())
        for _ in range(3):
            model(torch.randn(8, 256, device="cuda")).sum().backward()
            optimizer.step()

    result = quickdev.run(train, 2, max_steps=5, memory_forecast="24", runs_dir=tmp_path / "runs")
    # The replay's optimizer steps (a warm-up and the measured one) are not the script's.
    assert result.optimizer_steps == 3 and result.status == "passed"
    assert len(result.losses) == 3
    assert result.memory_forecast is not None and result.memory_forecast.peak is not None


def test_two_forwards_before_backward_are_both_replayed(tmp_path: Path) -> None:
    def pairs(twice: bool) -> Callable[[], None]:
        def train() -> None:
            model = _mlp()
            optimizer = torch.optim.AdamW(model.parameters())
            for _ in range(2):
                a = model(torch.randn(1024, 256, device="cuda"))
                if twice:  # a siamese loss: both views' activations live until backward
                    b = model(torch.randn(1024, 256, device="cuda"))
                    loss = F.cosine_similarity(a, b).mean()
                else:
                    loss = a.pow(2).mean()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()

        return train

    one = _run(pairs(False), tmp_path).memory_forecast
    two = _run(pairs(True), tmp_path).memory_forecast
    assert one is not None and two is not None
    assert two.loss.startswith("replayed")
    assert two.modules[0].activations == 2 * one.modules[0].activations


IDIOMS = Path(__file__).resolve().parent.parent / "job" / "idioms"


@pytest.mark.parametrize(
    ("folder", "script", "flags", "batch_size"),
    [
        (IDIOMS, "word_lm.py", [], 20),  # hand-made (time, batch) batches, manual SGD, LSTM
        (IDIOMS, "gpt_loop.py", ["--eval-forwards", "400"], 8),  # nanoGPT's loop in small
        (IDIOMS, "hf_trainer.py", [], 4),  # Hugging Face Trainer
        (IDIOMS, "accelerate_loop.py", [], 16),  # accelerate's prepared model and optimizer
        # Lightning: the optimizer's step runs the training step in its closure.
        (EXAMPLES, "lightning_module.py", [], 32),
    ],
)
def test_unmodified_scripts_print_and_record_a_forecast(
    run_quickdev: Any,
    tmp_path: Path,
    folder: Path,
    script: str,
    flags: list[str],
    batch_size: int,
) -> None:
    project = tmp_path / "project"
    shutil.copytree(folder, project)
    run = run_quickdev(
        "--runs-dir",
        str(tmp_path / "runs"),
        *flags,
        "--memory-forecast",
        str(project / script),
        cwd=project,
        json_output=False,
    )
    assert run.returncode == 0, run.stderr
    # What "auto" forecasts for: this machine's GPU, else the sizes most cards have.
    fits_here = ["cuda:0"] if CUDA else ["24 GB", "40 GB", "80 GB"]
    line = next(x for x in run.stderr.splitlines() if "memory forecast:" in x)
    assert re.search(
        rf"memory forecast: ≈ [\d.]+ [MG]B peak · fits {fits_here[0]}\b.* \(at ", line
    ), line
    (result_file,) = (tmp_path / "runs").glob("*/result.json")
    result = json.loads(result_file.read_text(encoding="utf-8"))
    forecast = result["memory_forecast"]
    assert forecast["error"] is None and forecast["batch_size"] == batch_size
    assert forecast["loss"].startswith("replayed")
    assert [f["device"].split(" (")[0] for f in forecast["fits"]] == fits_here
    assert sum(forecast["categories"].values()) <= forecast["peak"]


def test_values_the_forward_reads_are_answered_as_in_the_real_step(tmp_path: Path) -> None:
    """nn.TransformerEncoder checks whether its mask is causal (``bool(...all())``), which a
    tensor without values cannot answer: the replay answers as the real step did."""

    def train() -> None:
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1)  # (time, batch) inputs
        model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).cuda()
        mask = nn.Transformer.generate_square_subsequent_mask(32, device="cuda")
        optimizer = torch.optim.AdamW(model.parameters())
        for _ in range(2):
            out = model(torch.randn(32, 8, 64, device="cuda"), mask=mask)
            if out.isnan().any():  # a read in the loss's code, too
                continue
            out.pow(2).mean().backward()
            optimizer.step()
            optimizer.zero_grad()

    forecast = _run(train, tmp_path).memory_forecast
    assert forecast is not None and forecast.peak is not None
    assert forecast.batch_size == 8  # (time, batch, features): batch_first is off
    assert forecast.loss.startswith("replayed")
    assert [m.name for m in forecast.modules] == ["layers.0", "layers.1"]


def test_backward_with_a_gradient_of_the_outputs_size_replays(tmp_path: Path) -> None:
    def train() -> None:
        model = _mlp()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            out = model(torch.randn(64, 256, device="cuda"))
            out.backward(torch.ones_like(out))  # no scalar loss: the gradient is given
            optimizer.step()
            optimizer.zero_grad()

    forecast = _run(train, tmp_path).memory_forecast
    assert forecast is not None and forecast.loss.startswith("replayed")


def test_a_step_whose_recipe_cannot_be_built_is_the_forecasts_error(tmp_path: Path) -> None:
    """The recipe's parts (the inputs, the batch size, DDP's buckets) are built from what
    was captured; a capture they cannot read must end as the forecast's error, not fail
    the job's result. No public script gives such a capture today, so the test stands in
    one: a step said captured whose forward was not recorded."""
    recorder = Recorder(EventHub(), make_budget())
    capture = StepCapture(recorder, "cpu", parse_devices("24"), lambda: None)
    capture.model = nn.Linear(4, 4)
    capture.state = "captured"
    result = JobResult(id="run", status="passed", stop_reason="completed")
    capture.on_result(result)
    assert result.memory_forecast is not None
    assert result.memory_forecast.error == "the step did not replay: StopIteration: "
    # Asked for and not made: the verdict says it is Quickdev's error (docs/verdict.md).
    reported = problems.take()
    assert [(p.kind, p.feature) for p in reported] == [("quickdev_error", "the memory forecast")]
    assert decide(dataclasses.replace(result, problems=reported)) is True
