"""All the quick-dev limits, installed in one place before the user's code runs."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from quickdev.events import EventHub
from quickdev.limits import device, eager, epochs, fabric, journal, loaders, rebind, steps
from quickdev.limits.budget import Budget
from quickdev.limits.hf import HuggingFaceLimits
from quickdev.limits.journal import loggers
from quickdev.limits.lightning import LightningLimits
from quickdev.limits.outputs import OutputPlacer
from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder
from quickdev.options import RunOptions

log = logging.getLogger(__name__)


def install_limits(
    options: RunOptions,
    run_dir: Path,
    hub: EventHub,
    budget: Budget,
    patcher: Patcher,
    imported_early: Iterable[str] = (),
) -> tuple[Recorder, str]:
    """Returns the recorder the limits report to and the device the job runs on.
    ``imported_early``: libraries the job imported before the limits (a debug job's
    Lightning), which hold the originals of what the limits replace."""
    recorder = Recorder(hub, budget)
    batches = None if options.no_limits else options.batches
    actual = device.resolve_device(options.device)
    cpu_only = actual == "cpu"
    # Independent of each other: they patch different functions.
    eager.install(patcher, lambda: recorder.setting_changed(eager.COMPILE_OFF))
    loaders.install(patcher, recorder, batches)
    if not options.no_limits:
        epochs.install(patcher, recorder.one_epoch_options, budget.allow_epochs)
    steps.install(patcher, recorder)
    # The device engine maps every device the script names onto this machine's.
    recorder.device = device.install(patcher, options.device, actual).report
    # The file journal sees every write, whoever makes it (torch.save, Lightning's and
    # Fabric's checkpoints, Hugging Face's saves): the user's tree is restored at the end.
    # --keep-outputs switches it off: files land where asked.
    if not options.keep_outputs:
        session = journal.install(patcher, run_dir)
        recorder.at_end(lambda: session.finish())
        loggers.install(patcher, run_dir)
    # The frameworks' own log and checkpoint folders go into the run directory up front,
    # so TensorBoard lists them while the job runs; Fabric reuses Lightning's placement.
    placer = OutputPlacer(run_dir, recorder, options.keep_outputs)
    lightning = LightningLimits(run_dir, batches, budget, cpu_only, placer)
    lightning.install(patcher)
    fabric.install(patcher, lightning)
    HuggingFaceLimits(run_dir, batches, budget, cpu_only, placer).install(patcher)
    # Last, after every module attribute is replaced: libraries a warm start or a debug
    # job imported before the limits hold the originals under their own names.
    preloaded = options.warm.preloaded if options.warm else ()
    rebound = rebind.install(patcher, rebind.imported_before_limits([*preloaded, *imported_early]))
    log.info(
        "limits: batches=%s max_steps=%s timeout_s=%s train_passes=%s loop_steps=%s "
        "eval_forwards=%s device=%s rebound=%d",
        batches,
        budget.max_steps,
        budget.timeout_s,
        budget.train_passes,
        budget.loop_steps,
        budget.eval_forwards,
        actual,
        rebound,
    )
    return recorder, actual
