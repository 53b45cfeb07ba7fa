"""From an observed step to the forecast in result.json: the peak, the devices it fits,
the largest batch size that fits where it does not, and one line of advice."""

from __future__ import annotations

import logging
import time

import torch

from quickdev.forecast.devices import Capacity, DeviceChoice, default_capacities
from quickdev.forecast.remedies import candidates
from quickdev.forecast.replay import Measurement, replay
from quickdev.forecast.step import StepRecipe
from quickdev.rundir.memory import (
    DeviceFit,
    MemoryForecast,
    ModuleMemory,
    RemedyForecast,
    format_gb,
    format_size,
)

log = logging.getLogger(__name__)

# cuBLAS's workspace, allocated through the caching allocator on the first matmul: 32 MiB
# by default on Hopper GPUs (8 MiB before), so the larger is counted.
CUBLAS_WORKSPACE = 32 << 20
# The CUDA context lives outside the allocator (about 0.3-0.6 GB); judging fit, this
# much of a device's memory is set aside for it.
CONTEXT_ALLOWANCE = 512 << 20
# Replays a batch-size search may make per device (each a fraction of a second to seconds):
# enough to bisect down to one batch size from 2**20.
MAX_SEARCH_REPLAYS = 24
NOT_COUNTED = (
    "the CUDA context (set aside as 0.5 GB when judging fit), other processes on the GPU, "
    "NCCL buffers, and memory used outside the training step (evaluation, checkpoints)"
)


def make_forecast(
    recipe: StepRecipe,
    device: torch.device,
    choice: DeviceChoice,
    precision: str,
) -> MemoryForecast:
    started = time.perf_counter()
    measured = {recipe.batch_size: replay(recipe, device, recipe.batch_size, detail=True)}
    observed = measured[recipe.batch_size]
    fits = []
    for capacity in capacities(choice):
        fits.append(_fit(recipe, device, capacity, measured))
    forecast = MemoryForecast(
        peak=observed.peak_allocated + CUBLAS_WORKSPACE,
        reserved=observed.peak_reserved + CUBLAS_WORKSPACE,
        workspace=CUBLAS_WORKSPACE,
        categories=observed.categories,
        peak_phase=observed.peak_at.phase,
        peak_module=observed.peak_at.module,
        modules=[ModuleMemory(**vars(m)) for m in observed.modules],
        batch_size=recipe.batch_size,
        precision=precision,
        optimizer=type(recipe.optimizer).__name__ if recipe.optimizer is not None else None,
        fits=fits,
        loss=_loss_line(recipe, observed),
        not_counted=NOT_COUNTED,
    )
    advise(recipe, device, forecast, measured)
    forecast.duration_s = round(time.perf_counter() - started, 3)
    return forecast


def capacities(choice: DeviceChoice) -> list[Capacity]:
    return (this_machine() if choice.auto else []) or list(choice.listed) or default_capacities()


def this_machine() -> list[Capacity]:
    """The job's own CUDA device, where there is one (the CPU stand-in says there is none)."""
    if not torch.cuda.is_available():
        return []
    index = torch.cuda.current_device() if torch.cuda.is_initialized() else 0  # type: ignore[no-untyped-call]
    total = torch.cuda.get_device_properties(index).total_memory
    return [Capacity(f"cuda:{index} ({format_gb(total)})", total)]


def needed(measurement: Measurement) -> int:
    """What must fit beside the CUDA context: the reserved segments and the workspace."""
    return measurement.peak_reserved + CUBLAS_WORKSPACE


def _fit(
    recipe: StepRecipe,
    device: torch.device,
    capacity: Capacity,
    measured: dict[int | None, Measurement],
) -> DeviceFit:
    usable = capacity.bytes - CONTEXT_ALLOWANCE
    if needed(measured[recipe.batch_size]) <= usable:
        return DeviceFit(capacity.name, capacity.bytes, True)
    return DeviceFit(
        capacity.name, capacity.bytes, False, largest_batch(recipe, device, usable, measured)
    )


def largest_batch(
    recipe: StepRecipe, device: torch.device, usable: int, measured: dict[int | None, Measurement]
) -> int | None:
    """The largest batch size whose step fits ``usable`` bytes, the next one up not:
    between a size that fits and one that does not, guesses alternate between the
    straight line through them (memory grows about linearly with the batch) and the
    middle (the allocator's segments make it a staircase), each checked by a replay.
    The answer was replayed and fits; only when ``MAX_SEARCH_REPLAYS`` runs out before the
    two meet is the next one up not known not to fit (the answer is then the largest size
    found to fit)."""
    top = recipe.batch_size
    if top is None or top <= 1:
        return None

    def need(size: int) -> int:
        if size not in measured:
            measured[size] = replay(recipe, device, size)
        return needed(measured[size])

    low, high = 1, top
    if need(low) > usable:
        return None
    for attempt in range(MAX_SEARCH_REPLAYS):
        if high - low <= 1:
            break
        slope = (need(high) - need(low)) / (high - low)
        guess = (low + high) // 2
        if attempt % 2 == 0 and slope > 0:
            guess = low + int((usable - need(low)) / slope)
        guess = min(max(guess, low + 1), high - 1)
        if need(guess) <= usable:
            low = guess
        else:
            high = guess
    return low


def _loss_line(recipe: StepRecipe, observed: Measurement) -> str:
    if observed.loss_replayed:
        return "replayed: the script's own calls between the model's output and backward"
    why = recipe.loss_note or "the calls between the model's output and backward did not replay"
    return f"stood in for by a gradient the size of the model's outputs ({why})"


def advise(
    recipe: StepRecipe,
    device: torch.device,
    forecast: MemoryForecast,
    measured: dict[int | None, Measurement],
) -> None:
    """For the first device the step does not fit: what fits, each found by a replay. The
    largest batch size that fits (the search replayed it), and at the step's own batch
    size each remedy (``remedies``) replayed: the advice names those that fit, with their
    figures; ``forecast.remedies`` keeps every one tried."""
    missing = next((f for f in forecast.fits if not f.fits), None)
    if missing is None or forecast.peak is None:
        return
    usable = missing.capacity - CONTEXT_ALLOWANCE
    working: list[RemedyForecast] = []
    # The remedies make activations smaller; where what stays anyway does not fit, none can.
    remedies = candidates(recipe, forecast.modules) if _static(forecast) <= usable else []
    for remedy in remedies:
        if working and remedy.autocast is not None and remedy.checkpointed:
            break  # one alone fits: the two together are not needed
        try:
            found = replay(recipe, device, recipe.batch_size, remedy=remedy)
        except Exception as exc:  # a remedy that does not replay is not advised
            log.info("the step did not replay with %s: %s", remedy.name, exc)
            continue
        tried = RemedyForecast(
            remedy.words,
            recipe.batch_size,
            found.peak_allocated + CUBLAS_WORKSPACE,
            missing.device,
            needed(found) <= usable,
        )
        forecast.remedies.append(tried)
        if tried.fits:
            working.append(tried)
    forecast.advice = _advice_line(forecast, missing, measured, working) or None


def _advice_line(
    forecast: MemoryForecast,
    missing: DeviceFit,
    measured: dict[int | None, Measurement],
    working: list[RemedyForecast],
) -> str:
    remedies = "; or ".join(f"{w.remedy} forecasts ≈ {format_size(w.peak)}" for w in working)
    if missing.max_batch_size is not None:
        at = measured[missing.max_batch_size]
        line = (
            f"Batch size {missing.max_batch_size} fits {missing.device} "
            f"(≈ {format_size(at.peak_allocated + CUBLAS_WORKSPACE)})"
        )
        if remedies:
            line += f". To keep batch size {forecast.batch_size}: {remedies}"
        return line + "."
    one = measured.get(1)
    if one is None:  # no batch size to change (none found, or 1 already)
        return f"To fit {missing.device}: {remedies}." if remedies else ""
    line = (
        f"Not even batch size 1 fits {missing.device} "
        f"(≈ {format_size(one.peak_allocated + CUBLAS_WORKSPACE)}); the weights, gradients "
        f"and optimizer state alone need {format_gb(_static(forecast))}, and the forecast "
        "does not replay what makes them smaller (lower-precision weights, an optimizer with "
        "less state, sharding the model with FSDP)"
    )
    return line + (f". At batch size {forecast.batch_size}: {remedies}." if remedies else ".")


def _static(forecast: MemoryForecast) -> int:
    """What the step holds whatever its batch: weights, their gradients, the optimizer's
    state (at the peak; the gradients in full, as by the end of backward)."""
    categories = forecast.categories
    gradients = max(categories.get("gradients", 0), sum(m.gradients for m in forecast.modules))
    return categories.get("parameters", 0) + gradients + categories.get("optimizer_state", 0)
