"""All the quick-dev limits, installed in one place before the user's code runs."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from quickdev.events import EventHub
from quickdev.limits import (
    adapters,
    device,
    eager,
    epochs,
    forecast_capture,
    job_rewriter,
    journal,
    loaders,
    loops,
    nonfinite,
    rebind,
    shapes,
    steps,
)
from quickdev.limits.budget import Budget
from quickdev.limits.journal import loggers
from quickdev.limits.outputs import OutputPlacer
from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder
from quickdev.options import RunOptions
from quickdev.rewrite import Rewriter, Transform

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Installed:
    recorder: Recorder  # what the limits report to
    device: str  # the device the job runs on
    rewriter: Rewriter | None  # compiles the main script as the project's modules are


def install_limits(
    options: RunOptions,
    run_dir: Path,
    hub: EventHub,
    budget: Budget,
    patcher: Patcher,
    imported_early: Iterable[str] = (),
    in_child: bool = False,
) -> Installed:
    """``imported_early``: libraries the job imported before the limits (a debug job's
    Lightning), which hold the originals of what the limits replace. ``in_child``: a
    process the script started (``quickdev.job.children``), which has joined the job's
    journal and inherited its environment already."""
    # The user's own modules (the script's folder, the working directory) are compiled with
    # loop exits and the tensor-shape recording. The loop exits go first: they read the
    # loops' headers as the user wrote them.
    roots = [
        os.getcwd(),
        *([os.path.dirname(os.path.abspath(options.script))] if options.script else []),
    ]
    budget.loops, loop_exits = loops.install(budget.ends_loops())
    transforms: list[Transform] = [loop_exits] if loop_exits else []
    seen = None
    if options.record_shapes:
        seen, recording = shapes.install(patcher)
        transforms.append(recording)
        hub.add(shapes.ShapesWriter(seen, run_dir))
    rewriter = job_rewriter.install(patcher, transforms, roots)
    recorder = Recorder(hub, budget, seen)
    batches = budget.batches
    actual = device.resolve_device(options.device)
    cpu_only = actual == "cpu"
    # Independent of each other: they patch different functions.
    eager.install(patcher, lambda: recorder.setting_changed(eager.COMPILE_OFF))
    loaders.install(patcher, recorder, batches)
    if not options.no_limits and not options.find_nonfinite:
        # The hunt trains for its step budget: the script's epochs are left as they are.
        epochs.install(patcher, recorder.one_epoch_options, budget.allow_epochs)
    # The device engine maps every device the script names onto this machine's.
    engine = device.install(patcher, options.device, actual)
    recorder.device = engine.report
    capture = None
    if options.memory_forecast is not None:
        # Its optimizer hooks go before the steps' own, which may end the job at a step.
        capture = forecast_capture.install(patcher, hub, recorder, actual, options, engine)
    steps.install(patcher, recorder, capture.watch if capture else None)
    if options.find_nonfinite:
        nonfinite.install(patcher, recorder, hub)
    # The file journal sees every write, whoever makes it (torch.save, Lightning's and
    # Fabric's checkpoints, Hugging Face's saves): the user's tree is restored at the end.
    # --keep-outputs switches it off: files land where asked.
    if not options.keep_outputs and not in_child:
        session = journal.install(patcher, run_dir)
        recorder.at_end(lambda: session.finish())
        loggers.install(patcher, run_dir)
    # The frameworks' own log and checkpoint folders go into the run directory up front,
    # so TensorBoard lists them while the job runs (quickdev.frameworks).
    placer = OutputPlacer(run_dir, recorder, options.keep_outputs)
    adapters.install(adapters.AdapterLimits(patcher, placer, budget, batches, cpu_only))
    # Last, after every module attribute is replaced: libraries a warm start or a debug
    # job imported before the limits hold the originals under their own names.
    preloaded = options.warm.preloaded if options.warm else ()
    rebound = rebind.install(patcher, rebind.imported_before_limits([*preloaded, *imported_early]))
    given = " ".join(f"{name}={value}" for name, value in budget.values.items())
    log.info("limits: %s device=%s rebound=%d", given, actual, rebound)
    return Installed(recorder, actual, rewriter)
