"""Hand-made batches keep their size; a slow step of one gets advice naming the script's knob.

A batch the script makes itself (``get_batch()`` slicing a tensor, as nanoGPT does) comes
from no DataLoader: there is no sampler to take fewer samples from, and its size is the
script's own code. So the job computes it as it is, measures the first such training step
(from the model's training forward to the optimizer's step), and where it took longer
than the bound says so once, with the script's batch-size option or setting found by the
static analysis (``quickdev.analysis``'s knobs of kind ``batch_size``).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils import _pytree as pytree

from quickdev.limits.patching import Patcher
from quickdev.limits.steps import job_hook
from quickdev.limits.user_code import caller_origin
from quickdev.rundir.step_cost import StepCost

log = logging.getLogger(__name__)


class HandMadeSteps:
    """Watches the top module's training forwards that no DataLoader feeds."""

    def __init__(
        self,
        patcher: Patcher,
        bound_s: float,
        records: list[StepCost],
        without_loader: Callable[[], bool],
        script: Path | None,
    ) -> None:
        self.bound_s = bound_s
        self.records = records
        self.without_loader = without_loader  # the recorder's: no DataLoader pass is open
        self.script = script
        self.started: float | None = None
        self.batch: int | None = None
        self.origin = ""
        self.done = False  # said once, or a step measured within the bound
        handle = register_optimizer_step_post_hook(lambda *args: self._stepped())
        patcher.on_undo(handle.remove)

    def watch(self, module: nn.Module) -> None:
        """The top module is known (``limits/steps.py``): time its training forwards."""
        handle = module.register_forward_pre_hook(job_hook(lambda m, args: self._forward(m, args)))
        self.undo = handle.remove

    def _forward(self, module: nn.Module, args: Any) -> None:
        if self.done or self.started is not None:
            return
        if not (module.training and torch.is_grad_enabled()) or not self.without_loader():
            return
        self.started = time.perf_counter()
        self.batch = _batch_size(args)
        self.origin = caller_origin(3)

    def _stepped(self) -> None:
        if self.started is None or self.done:
            return
        took = time.perf_counter() - self.started
        self.started = None
        self.done = True
        if took <= self.bound_s or self.batch is None:
            return
        advice = knob_advice(self.script, self.batch)
        line = (
            f"hand-made batches keep their size: a step at batch {self.batch} took "
            f"{took:.1f} s on this CPU ({_short(self.origin)}); {advice}"
        )
        self.records.append(
            StepCost(
                origin=self.origin,
                batch_size=self.batch,
                computed_at=self.batch,
                full_s=round(took, 3),
                measured=True,
                why="hand-made batches (no DataLoader)",
                line=line,
            )
        )
        log.info("step cost: %s", line)
        print(f"quickdev: {line}", file=sys.stderr, flush=True)


def knob_advice(script: Path | None, batch: int) -> str:
    """The script's batch-size option or constant, and a smaller value for a check."""
    smaller = max(1, min(8, batch // 2))
    knob = None
    if script is not None and script.is_file():
        from quickdev.analysis import analyze_file

        analysis = analyze_file(script)
        kinds = analysis.knobs if analysis is not None else ()
        knob = next((k for k in kinds if k.kind == "batch_size" and not k.is_switch), None)
    if knob is None:
        return f"a smaller batch (such as {smaller}) would make the check faster"
    where = f"{script.name if script else ''}:{knob.line + 1}"
    default = "" if knob.default is None else f" (default {knob.default})"
    if knob.is_global:
        return (
            f"{knob.flag}{default} at {where} sets it; a value such as {smaller} would make "
            "the check faster"
        )
    return (
        f"{knob.flag}{default} at {where} sets it: pass -- {knob.flag} {smaller} "
        "(or the quickdev.batchSize setting) for a faster check"
    )


def _batch_size(args: Any) -> int | None:
    for leaf in pytree.tree_leaves(args):
        if isinstance(leaf, torch.Tensor) and leaf.dim() > 0:
            return int(leaf.shape[0])
    return None


def _short(origin: str) -> str:
    file, _, line = origin.rpartition(":")
    return f"{os.path.basename(file)}:{line}" if file else origin
