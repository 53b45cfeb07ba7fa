"""All the quick-dev limits, installed in one place before the user's code runs."""

from __future__ import annotations

import logging
from pathlib import Path

from quickdev.events import EventHub
from quickdev.limits import device, eager, epochs, loaders, saves, steps
from quickdev.limits.budget import Budget
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
    actual = device.resolve_device(options.device)
    cpu_only = actual == "cpu"
    # Independent of each other: they patch different functions.
    eager.install(patcher)
    loaders.install(patcher, recorder, batches)
    if not options.no_limits:
        epochs.install(patcher, recorder.one_epoch_options)
    steps.install(patcher, recorder)
    # Dependencies, in order: saves wraps the torch.load that the device engine
    # installed (a redirected checkpoint is still mapped); Lightning's Trainer saves
    # through the same redirector and hands its step budget to the Trainer.
    recorder.device = device.install(patcher, options.device, actual).report
    redirector = saves.SaveRedirector(run_dir, recorder)
    saves.install(patcher, redirector)
    LightningLimits(run_dir, batches, budget, cpu_only, redirector).install(patcher)
    log.info(
        "limits: batches=%s max_steps=%s timeout_s=%s device=%s",
        batches,
        options.max_steps,
        options.timeout_s,
        actual,
    )
    return recorder, actual
