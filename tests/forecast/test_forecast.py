"""The forecast of whole training steps, made by a real job on this CPU-only machine:
figures that follow from the models' shapes, per-module figures for a GPT, a CNN, an
LSTM language model and a Hugging Face model, and the largest batch size that fits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import quickdev
import torch
from quickdev.rundir.memory import GB, MemoryForecast, format_size

from tests.forecast import models
from tests.forecast.models import analytic_mlp_bytes, within
from tests.support.stand_in import cpu_stand_in


def forecast_of(
    train: Callable[[], None], tmp_path: Path, devices: str = "24", batches: int = 2
) -> MemoryForecast:
    result = quickdev.run(train, batches, memory_forecast=devices, runs_dir=tmp_path / "runs")
    assert result.status in ("passed", "stopped"), result.error
    assert result.optimizer_steps >= 1, "the step under test did not run"
    forecast = result.memory_forecast
    assert forecast is not None and forecast.error is None, forecast
    assert forecast.peak is not None
    return forecast


def test_mlp_parameters_and_adamw_state_are_what_their_shapes_say(tmp_path: Path) -> None:
    batch, width, depth = 64, 512, 4
    forecast = forecast_of(models.mlp_training(batch, width, depth), tmp_path)
    expected = analytic_mlp_bytes(batch, width, depth)
    assert [m.name for m in forecast.modules] == ["0", "1", "2", "3"]
    for module in forecast.modules:
        assert within(module.parameters, expected["per_block_parameters"])
        assert within(module.optimizer_state, 2 * expected["per_block_parameters"])
    assert within(sum(m.parameters for m in forecast.modules), expected["parameters"])
    # A small batch peaks in AdamW's step: weights, gradients, two moments, and foreach
    # AdamW's square-root scratch over every parameter at once.
    assert forecast.peak_phase == "optimizer step"
    params = expected["parameters"]
    assert within(forecast.categories["parameters"], params)
    assert within(forecast.categories["gradients"], params)
    assert within(forecast.categories["optimizer_state"], expected["adamw_state"])
    assert within(forecast.peak - forecast.workspace, 5 * params)


def test_mlp_activations_are_what_their_shapes_say(tmp_path: Path) -> None:
    batch, width, depth = 8192, 128, 4
    forecast = forecast_of(models.mlp_training(batch, width, depth), tmp_path)
    expected = analytic_mlp_bytes(batch, width, depth)
    # Each block keeps its ReLU output for backward: batch x width float32.
    for module in forecast.modules:
        assert within(module.activations, expected["block_activations"]), module
    assert forecast.peak_phase in ("forward", "loss", "backward")
    assert forecast.categories["activations"] >= depth * expected["block_activations"]


def test_gpt_forecast_has_figures_per_block(tmp_path: Path) -> None:
    forecast = forecast_of(
        models.gpt_training(batch=4, block=64, layers=2, width=64, heads=4), tmp_path
    )
    names = [m.name for m in forecast.modules]
    assert names == [
        "transformer.wte",
        "transformer.wpe",
        "transformer.h.0",
        "transformer.h.1",
        "transformer.ln_f",
        "lm_head",
    ]
    blocks = [m for m in forecast.modules if m.name.startswith("transformer.h.")]
    assert all(b.activations > 0 and b.parameters > 0 for b in blocks)
    assert blocks[0].activations == blocks[1].activations
    # The head's weight is the token embedding's (tied): counted once, with the embedding.
    head = forecast.modules[-1]
    assert head.parameters == 0 and forecast.modules[0].parameters > 0
    assert forecast.batch_size == 4
    assert forecast.precision == "float32 weights, autocast bfloat16"
    assert forecast.loss.startswith("replayed")
    assert forecast.optimizer == "AdamW"


def test_cnn_forecast_has_figures_per_stage(tmp_path: Path) -> None:
    forecast = forecast_of(models.cnn_training(batch=16, images=32), tmp_path)
    by_name = {m.name: m for m in forecast.modules}
    assert {"conv1", "bn1", "layer1", "layer2", "layer3", "layer4", "linear"} <= set(by_name)
    # Each stage halves the image and doubles the channels: half the activations.
    stages = [by_name[f"layer{i}"].activations for i in range(1, 5)]
    assert stages == sorted(stages, reverse=True) and stages[-1] > 0
    assert within(stages[1], stages[0] / 2, 0.25)
    assert forecast.batch_size == 16
    assert forecast.optimizer == "SGD"
    assert forecast.loss.startswith("replayed")  # criterion(model(inputs), targets)


def test_lstm_language_model_finds_its_batch_in_the_second_dimension(tmp_path: Path) -> None:
    result = quickdev.run(
        models.lstm_training(batch=20, bptt=35, ntoken=2000),
        memory_forecast="24",
        runs_dir=tmp_path / "runs",
    )
    forecast = result.memory_forecast
    assert result.loop_batches >= 1, "the hand-made batches did not train"
    assert forecast is not None and forecast.error is None, forecast
    assert forecast.batch_size == 20  # (35, 20) token ids: time first
    assert forecast.optimizer is None  # hand-written SGD
    assert forecast.loss.startswith("replayed")
    decoder = next(m for m in forecast.modules if m.name == "decoder")
    # log_softmax over (35 * 20) x 2000 float32, kept for NLLLoss's backward.
    assert decoder.activations >= 35 * 20 * 2000 * 4


def test_hugging_face_model_built_from_its_config(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")

    def train() -> None:
        config = transformers.GPT2Config(
            n_layer=2, n_embd=64, n_head=4, vocab_size=1000, n_positions=128
        )
        model = transformers.GPT2LMHeadModel(config).to("cuda")
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for _ in range(2):
            ids = torch.randint(0, 1000, (4, 64), device="cuda")
            model(input_ids=ids, labels=ids).loss.backward()
            optimizer.step()
            optimizer.zero_grad()

    forecast = forecast_of(train, tmp_path)
    names = [m.name for m in forecast.modules]
    assert "transformer.h.0" in names and "transformer.h.1" in names
    assert forecast.batch_size == 4
    assert forecast.loss.startswith("replayed")  # out.loss: the model's own loss


def test_largest_fitting_batch_size_fits_and_the_next_does_not(tmp_path: Path) -> None:
    width, depth, batch = 64, 8, 32768
    small = "0.625"  # 640 MB: 128 MB once the CUDA context's share is set aside
    forecast = forecast_of(models.mlp_training(batch, width, depth), tmp_path, small)
    (fit,) = forecast.fits
    assert not fit.fits and fit.max_batch_size is not None
    assert 1 <= fit.max_batch_size < batch
    assert forecast.advice and f"Batch size {fit.max_batch_size} fits" in forecast.advice
    # The same script at that batch size fits; one more does not.
    at = forecast_of(models.mlp_training(fit.max_batch_size, width, depth), tmp_path, small)
    above = forecast_of(models.mlp_training(fit.max_batch_size + 1, width, depth), tmp_path, small)
    assert at.fits[0].fits
    assert not above.fits[0].fits


def test_a_model_that_cannot_fit_at_any_batch_size_says_so(tmp_path: Path) -> None:
    forecast = forecast_of(models.mlp_training(8, 2048, 8), tmp_path, "0.625")
    assert forecast.fits[0].max_batch_size is None
    assert forecast.advice and forecast.advice.startswith("Not even batch size 1 fits 0.6 GB")
    assert "weights, gradients and optimizer state alone need" in forecast.advice
    # What shrinks activations cannot help what stays whatever the batch: nothing replayed.
    assert forecast.remedies == []


def test_the_model_is_left_as_the_script_had_it(tmp_path: Path) -> None:
    kept: dict[str, torch.Tensor] = {}
    trained: list[torch.nn.Module] = []

    def train() -> None:
        model = torch.nn.Sequential(
            torch.nn.Linear(32, 32), torch.nn.Dropout(0.5), torch.nn.Linear(32, 32)
        )
        optimizer = torch.optim.AdamW(model.parameters())
        for _ in range(2):
            model(torch.randn(4, 32)).sum().backward()
            optimizer.step()
        model.eval()  # the script's test phase; the forecast replays the training step
        kept.update({k: v.clone() for k, v in model.state_dict().items()})
        trained.append(model)

    forecast = forecast_of(train, tmp_path, batches=5)  # the script goes on after its loop
    # Replayed as trained: dropout keeps its output and mask for backward (not in eval).
    assert forecast.modules[1].name == "1" and forecast.modules[1].activations > 0
    model = trained[0]
    assert not model.training
    for name, tensor in model.state_dict().items():
        assert type(tensor) is torch.Tensor and torch.equal(tensor, kept[name]), name
    assert all(p.grad is None or type(p.grad) is torch.Tensor for p in model.parameters())


def test_no_training_step_gives_a_one_line_reason(tmp_path: Path) -> None:
    def evaluate_only() -> None:
        model = models.mlp(16, 2)
        with torch.no_grad():
            model(torch.randn(4, 16))

    result = quickdev.run(evaluate_only, memory_forecast="auto", runs_dir=tmp_path / "runs")
    forecast = result.memory_forecast
    assert forecast is not None and forecast.peak is None
    assert forecast.error and "no training step" in forecast.error


def test_a_budget_that_ends_the_job_before_training_is_named(tmp_path: Path) -> None:
    """nanoGPT evaluates for eval_iters batches before its first step: the job's budget on
    evaluation forwards ends it there, and the forecast says so."""

    def evaluate_then_train() -> None:
        model = models.mlp(16, 2).cuda()
        optimizer = torch.optim.AdamW(model.parameters())
        with torch.no_grad():
            for _ in range(200):
                model(torch.randn(4, 16, device="cuda"))
        model(torch.randn(4, 16, device="cuda")).sum().backward()
        optimizer.step()

    result = quickdev.run(evaluate_then_train, memory_forecast="24", runs_dir=tmp_path / "runs")
    assert (result.status, result.stop_reason, result.optimizer_steps) == (
        "stopped",
        "eval_forwards",
        0,
    )
    forecast = result.memory_forecast
    assert forecast is not None and forecast.peak is None
    assert forecast.error == (
        "no training step of the model ran before the job stopped (eval_forwards), "
        "and the forecast replays the first one"
    )


@cpu_stand_in
def test_this_machines_absence_of_cuda_means_the_default_sizes(tmp_path: Path) -> None:
    forecast = forecast_of(models.mlp_training(8, 64, 2), tmp_path, "auto")
    assert [f.device for f in forecast.fits] == ["24 GB", "40 GB", "80 GB"]
    assert [f.capacity for f in forecast.fits] == [24 * GB, 40 * GB, 80 * GB]
    assert forecast.headline().endswith("· fits 24 GB")


def test_the_advice_is_what_replaying_the_step_with_it_gives(tmp_path: Path) -> None:
    """A GPT trained in float32 that does not fit: the forecast replays the step with each
    remedy and advises only those that fit, with their figures. The same script with
    each remedy made forecasts those very figures: the advised one fits, the one left out
    (bfloat16 autocast here) does not; the batch size advised fits too."""
    shape = dict(batch=32, block=256, layers=4, width=128, heads=4)
    device = "0.7"  # 205 MB beside the CUDA context's share
    forecast = forecast_of(models.gpt_training(**shape, autocast=False), tmp_path, device)
    (fit,) = forecast.fits
    assert not fit.fits and fit.max_batch_size is not None
    tried = {r.remedy.split(" (")[0]: r for r in forecast.remedies}
    checkpointing = tried["activation checkpointing of each transformer.h.* block"]
    autocast = tried["bfloat16 autocast"]
    assert (checkpointing.fits, autocast.fits) == (True, False)
    assert checkpointing.peak < autocast.peak < forecast.peak
    advice = forecast.advice or ""
    assert f"To keep batch size 32: {checkpointing.remedy} forecasts ≈ " in advice
    assert "bfloat16" not in advice

    made = forecast_of(
        models.gpt_training(**shape, autocast=False, checkpointed=True), tmp_path, device
    )
    assert made.peak == checkpointing.peak and made.fits[0].fits
    assert f"≈ {format_size(made.peak)}" in advice
    made = forecast_of(models.gpt_training(**shape, autocast=True), tmp_path, device)
    assert made.peak == autocast.peak and not made.fits[0].fits
    smaller = {**shape, "batch": fit.max_batch_size}
    made = forecast_of(models.gpt_training(**smaller, autocast=False), tmp_path, device)
    assert made.fits[0].fits
    assert advice.startswith(
        f"Batch size {fit.max_batch_size} fits 0.7 GB (≈ {format_size(made.peak)})"
    )


class HeadHeavyLM(torch.nn.Module):
    """Most of the step's activations are the head's logits, which the loss keeps."""

    def __init__(self, vocab: int = 8192, width: int = 64) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.body = torch.nn.Sequential(
            torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width)
        )
        self.head = torch.nn.Sequential(torch.nn.LayerNorm(width), torch.nn.Linear(width, vocab))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self.head(self.body(self.embed(idx)))
        return torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def test_checkpointing_a_head_whose_logits_the_loss_keeps_is_not_advised(tmp_path: Path) -> None:
    def train() -> None:
        model = HeadHeavyLM().to("cuda")
        optimizer = torch.optim.AdamW(model.parameters())
        for _ in range(2):
            idx = torch.randint(0, 8192, (16, 256), device="cuda")
            model(idx, idx).backward()
            optimizer.step()
            optimizer.zero_grad()

    forecast = forecast_of(train, tmp_path, "0.75")
    heaviest = max(forecast.modules, key=lambda m: m.activations)
    assert heaviest.name == "head" and not forecast.fits[0].fits
    (head,) = [
        r for r in forecast.remedies if r.remedy.startswith("activation checkpointing of head")
    ]
    # Replayed: the logits stay for the loss, so checkpointing the head saves next to nothing.
    assert head.peak > 0.95 * forecast.peak and not head.fits
    assert forecast.advice and "checkpointing" not in forecast.advice
