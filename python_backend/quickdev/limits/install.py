"""All the quick-dev limits, installed in one place before the user's code runs."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

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
    step_cost,
    steps,
)
from quickdev.limits.budget import Budget
from quickdev.limits.journal import loggers
from quickdev.limits.outputs import OutputPlacer
from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder
from quickdev.limits.step_cost import handover
from quickdev.options import RunOptions
from quickdev.rewrite import Rewriter, Transform
from quickdev.rundir.option_table import STEP_SECONDS

if TYPE_CHECKING:
    from torch import nn

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Installed:
    recorder: Recorder  # what the limits report to
    device: str  # the device the job runs on
    rewriter: Rewriter | None  # compiles the main script as the project's modules are
    # Full-size steps too slow for this CPU computed at a smaller batch (None: off).
    step_cost: step_cost.StepCostCheck | None = None


def install_limits(
    options: RunOptions,
    run_dir: Path,
    hub: EventHub,
    budget: Budget,
    patcher: Patcher,
    imported_early: Iterable[str] = (),
    in_child: bool = False,
    in_process: bool = False,
) -> Installed:
    """``imported_early``: libraries the job imported before the limits (a debug job's
    Lightning), which hold the originals of what the limits replace. ``in_child``: a
    process the script started (``quickdev.job.children``), which has joined the job's
    journal and inherited its environment already. ``in_process``: the in-process API,
    whose host process the job must not fork."""
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
    capture: forecast_capture.StepCapture | None = None
    step_seconds = budget.values[STEP_SECONDS]
    bound = None if step_seconds is None else float(step_seconds)
    checker = None
    if bound is not None and cpu_only and not in_child and not in_process:
        # The memory forecast's capture is made below; these find it when they are called.
        checker = step_cost.install(
            patcher,
            bound,
            recorder.step_costs,
            memory=options.memory_forecast is not None,
            step_record=lambda: handover.record_of_step(capture) if capture else None,
            adopt_record=lambda record: handover.adopt(capture, record) if capture else None,
            quiet=lambda: _quiet_probe(recorder, hub, capture),
            signature=loaders.batch_signature,
        )
        recorder.on_backward_end.append(checker.calibration.step_ended)
    hand_made_watch = None
    if bound is not None and not in_process:
        script = Path(options.script) if options.script else None
        hand_made = step_cost.HandMadeSteps(
            patcher, bound, recorder.step_costs, recorder.in_loop_without_loader, script
        )
        hand_made_watch = hand_made.watch
    # Independent of each other: they patch different functions.
    eager.install(patcher, lambda: recorder.setting_changed(eager.COMPILE_OFF))
    loaders.install(patcher, recorder, batches, checker)
    if not options.no_limits and not options.find_nonfinite:
        # The hunt trains for its step budget: the script's epochs are left as they are.
        epochs.install(patcher, recorder.one_epoch_options, budget.allow_epochs)
    # The device engine maps every device the script names onto this machine's.
    # Under the NaN hunt, CUDA autocast regions run in float32 here, and the hunt checks each
    # call against the dtype CUDA's autocast would give it (nonfinite/float16.py).
    float32_why = nonfinite.FLOAT32_REGIONS if options.find_nonfinite else None
    engine = device.install(patcher, options.device, actual, float32_why)
    recorder.device = engine.report
    if options.memory_forecast is not None:
        # Its optimizer hooks go before the steps' own, which may end the job at a step.
        capture = forecast_capture.install(patcher, hub, recorder, actual, options, engine)
    watchers = [w for w in (capture.watch if capture else None, hand_made_watch) if w]

    def on_top_module(module: nn.Module) -> None:
        for watch in watchers:
            watch(module)

    steps.install(patcher, recorder, on_top_module)
    if options.find_nonfinite:
        nonfinite.install(patcher, recorder, hub, engine)
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
    return Installed(recorder, actual, rewriter, checker)


def _quiet_probe(
    recorder: Recorder, hub: EventHub, capture: forecast_capture.StepCapture | None
) -> None:
    """In a step-cost probe (a copy of the job running a step on fake tensors): nothing is
    counted, and no observer but the memory forecast's capture hears of it."""
    recorder.paused = True
    hub.keep_only([capture] if capture is not None else [])
