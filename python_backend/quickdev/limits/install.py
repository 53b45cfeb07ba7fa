"""All the quick-dev limits, installed in one place before the user's code runs."""

from __future__ import annotations

import logging
from pathlib import Path

from quickdev.events import EventHub
from quickdev.limits import device_map, eager, epochs, fabric, loaders, saves, steps
from quickdev.limits.budget import Budget
from quickdev.limits.hf import HuggingFaceLimits
from quickdev.limits.lightning import LightningLimits
from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder
from quickdev.options import RunOptions

log = logging.getLogger(__name__)


def install_limits(
    options: RunOptions, run_dir: Path, hub: EventHub, budget: Budget, patcher: Patcher
) -> tuple[Recorder, str]:
    """Returns the recorder the limits report to and the device the job runs on."""
    recorder = Recorder(hub, budget)
    batches = None if options.no_limits else options.batches
    device = device_map.resolve_device(options.device)
    cpu_only = device == "cpu"
    # Independent of each other: they patch different functions.
    eager.install(patcher)
    loaders.install(patcher, recorder, batches)
    if not options.no_limits:
        epochs.install(patcher, recorder.one_epoch_options, budget.allow_epochs)
    steps.install(patcher, recorder)
    # Dependencies, in order: saves wraps the torch.load that device_map installed (a
    # redirected checkpoint is still mapped to the CPU); Lightning's Trainer, Fabric and
    # Hugging Face's Trainer save through the same redirector; Fabric reuses Lightning's
    # logger redirection.
    if cpu_only:
        device_map.install(patcher)
    redirector = saves.SaveRedirector(run_dir, recorder)
    saves.install(patcher, redirector)
    lightning = LightningLimits(run_dir, batches, budget, cpu_only, redirector)
    lightning.install(patcher)
    fabric.install(patcher, lightning)
    HuggingFaceLimits(run_dir, batches, budget, cpu_only, redirector).install(patcher)
    log.info(
        "limits: batches=%s max_steps=%s timeout_s=%s train_passes=%s loop_steps=%s "
        "eval_forwards=%s device=%s",
        batches,
        budget.max_steps,
        budget.timeout_s,
        budget.train_passes,
        budget.loop_steps,
        budget.eval_forwards,
        device,
    )
    return recorder, device
