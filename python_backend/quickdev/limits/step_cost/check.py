"""Whether a DataLoader's full-size step is affordable on this CPU, and what to do if not.

At the first batch of a loader (``limits/loaders.py``), before the script computes on it:

1. A step that is certainly cheap (the model's parameters times the batch's elements, a
   bound on its FLOPs, fits the bound easily) or that was measured cheap before (the same
   loader, batch and model, cached) is left alone: nothing is forked, nothing changes.
2. Otherwise the script's own pass runs once on fake tensors at the full batch size
   (``probe.py``): its FLOPs over this CPU's speed (``speed.py``) estimate the full step's
   seconds. An error there that is the script's fails the job at once, with the script's
   own frames: the full-size step fails, whatever size the arithmetic would run at.
3. Above the bound (``--step-seconds``), the pass runs once more on fake tensors at a
   smaller batch (the first ``k`` samples of the same batch): where it fails there but not
   at full size (a hard-coded ``view(256, -1)``, ``torch.zeros(batch_size, …)``), the batch
   is kept. Else the loader computes on the first ``k`` samples of each of its batches
   (``smaller.py``) and the job says so before the step runs.

Loaders whose batches cannot be taken apart (an IterableDataset, a dataset that batches
itself) keep their size; so do hand-made batches, where the advice names the script's knob
(``hand_made.py``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils.data import DataLoader

from quickdev import problems
from quickdev.limits.own_work import own_work
from quickdev.limits.step_cost import probe, smaller
from quickdev.limits.step_cost.calibration import Calibration
from quickdev.limits.step_cost.estimate import (
    SMALLEST_BATCH,
    cache_work,
    cached_work,
    certainly_cheap,
    smaller_size,
)
from quickdev.limits.step_cost.speed import Speed, measured_speed
from quickdev.limits.work_clock import cores
from quickdev.rundir.result import ErrorInfo, LoaderStats
from quickdev.rundir.step_cost import StepCost

log = logging.getLogger(__name__)

# A smaller step aims at this share of the bound: two training steps and an evaluation
# pass at the smaller size fit in about one bound.
SMALLER_SHARE = 0.25
# Longest a probe may take (a fake pass of a large model takes seconds).
PROBE_TIMEOUT_S = 60.0
_DECISION = "_quickdev_step_cost"
_GENERATOR = "_quickdev_pass"  # on a torch iterator: a weak reference to its pass's generator
FEATURE = "the step-cost check"


class Decision:
    """What was decided for one loader: ``keep`` the batch, or compute on ``keep`` samples."""

    def __init__(self, smaller: int | None) -> None:
        self.smaller = smaller


class StepCostCheck:
    """The job's check, called by the loaders; its ``records`` go into result.json."""

    def __init__(
        self,
        bound_s: float,
        records: list[StepCost],
        parameters: Callable[[], int | None],
        *,
        memory: bool,
        step_record: Callable[[], bytes | None],
        adopt_record: Callable[[bytes | None], None],
        quiet: Callable[[], None],
        signature: Callable[[Any], str],
        calibration: Calibration,
        speed: Callable[[], Speed] = measured_speed,
    ) -> None:
        self.bound_s = bound_s
        self.records = records
        self.parameters = parameters  # the model's parameter count, once known
        self.memory = memory  # the memory forecast is on: the fake step checks memory too
        self.step_record = step_record
        self.adopt_record = adopt_record
        self.quiet = quiet
        self.signature = signature  # the loaders' batch_signature
        self.speed = speed
        self.calibration = calibration  # the job's first real step against its estimate
        self.pid = os.getpid()
        # Given an exception: its ErrorInfo and its traceback as Python prints it (the
        # job's describe and user_traceback, handed over by the job: limits cannot
        # import the job).
        self.describe: Callable[[BaseException], tuple[ErrorInfo, str]] = _bare_describe

    # -- the loaders' side ------------------------------------------------------------

    def new_pass(self, loader: DataLoader[Any], iterator: Any, generator: Any) -> None:
        """Before a pass's first batch: a loader not decided yet takes a first look (its
        first samples only), one made smaller is made smaller again. ``generator``: what
        the loop iterates."""
        running = probe.current()
        if running is not None:  # in a probe, another pass begins: the probed one is over
            running.pass_over()
        if os.getpid() != self.pid:
            return
        with contextlib.suppress(AttributeError, TypeError):
            setattr(iterator, _GENERATOR, weakref.ref(generator))
        decision: Decision | None = getattr(loader, _DECISION, None)
        if decision is not None and decision.smaller is None:
            return
        if decision is None and smaller.why_not(loader, iterator) is not None:
            return  # its first batch comes whole, and it keeps its size
        indices = smaller.watch(iterator)
        if indices is None:
            return
        if decision is None:
            indices.peek = smaller.PEEK
        else:
            indices.keep = decision.smaller

    def first_batch(
        self, loader: DataLoader[Any], iterator: Any, stats: LoaderStats, batch: Any
    ) -> Any:
        """The batch to hand the script for a pass's first batch (``batch``: what the loader
        fetched, a first look or the whole batch): the whole batch, or its first samples.
        In a probe (the forked copy), the batch the probe runs the script's pass on."""
        if os.getpid() != self.pid or probe.current() is not None:
            return batch
        if getattr(loader, _DECISION, None) is not None:
            return batch
        first = smaller.FirstBatch(iterator, stats, batch)
        try:
            given = self._first_batch(loader, first)
        except Exception as exc:  # the check's own failure: the batch is kept, and said
            log.exception("the step-cost check failed; the batch is kept")
            _decide(loader, None)
            problems.own_error(FEATURE, exc)
            return first.whole()
        if isinstance(given, _Fails):
            raise given.exc
        return given

    def probe_batches(self, batch: Any) -> Iterator[Any] | None:
        """In a probe: the batches its loop gets (``batch``, then the probe's end)."""
        running = probe.current()
        return running.batches(batch) if running is not None else None

    def _first_batch(self, loader: DataLoader[Any], first: smaller.FirstBatch) -> Any:
        origin, full = first.stats.origin, first.size
        if full is None or full < 2 * SMALLEST_BATCH:
            return self._keep(loader, first, f"a batch of {full}: nothing smaller to take")
        if first.indices is None:
            cannot = smaller.why_not(loader, first.iterator) or "its batches' indices are unseen"
            # Kept whatever it costs, as a hand-made batch is (``hand_made.py``).
            return self._keep(loader, first, cannot)
        shapes = first.shapes()
        look = shapes.stand_in() if shapes is not None else first.whole()
        with own_work():
            first.stats.batch_signature = self.signature(look)
        speed = self.speed()
        on = cores(torch.get_num_threads())
        if certainly_cheap(self.parameters(), look, speed, on, self.bound_s):
            return self._keep(loader, first, "cheap: parameters x batch elements")
        key = json.dumps([origin, first.stats.batch_signature, self.parameters()])
        scale = self.calibration.scale
        cached = cached_work(key)
        if cached is not None and speed.seconds(cached[0], on, cached[1]) * scale <= self.bound_s:
            return self._keep(loader, first, "cheap as measured before")

        report, in_probe = self._probe(shapes.make if shapes else first.whole, first.iterator)
        if in_probe is not None:
            return in_probe  # in the probe: the script's loop takes it from here
        counted = speed.seconds(report.flops, on, report.written)
        estimate = counted * scale
        unit = "step" if report.trained or report.outcome == probe.STEP else "evaluation batch"
        log.info(
            "step cost: %s batch %d: %s, %d FLOPs, %s bytes written, ≈ %.3g s on %.2f core(s)%s; "
            "probe %.2f s%s",
            origin,
            full,
            report.outcome,
            sum(report.flops.values()),
            report.written,
            estimate,
            on,
            f" ({counted:.3g} s counted x {scale:.2f} as the job's first step showed)"
            if scale != 1
            else "",
            report.seconds,
            f" ({report.why})" if report.why else "",
        )
        if report.outcome == probe.ERROR and report.reliable:
            return self._failed(origin, full, unit, estimate, report)
        if report.complete and estimate <= self.bound_s:
            cache_work(key, report.flops, report.written)
            if report.trained:
                self.calibration.time_next_step(estimate)
            return self._keep(loader, first, f"≈ {_seconds(estimate)} at full size")
        if not report.complete:
            if estimate > self.bound_s:
                self._kept(origin, full, unit, estimate, report, "partial", _unchecked(report))
            return self._keep(loader, first, f"its check ended {report.outcome}")
        keep = smaller_size(full, estimate, self.bound_s * SMALLER_SHARE)
        small = first.first(keep)
        check, in_probe = self._probe(lambda: small, first.iterator)
        if in_probe is not None:
            return in_probe  # in the second probe
        if check.outcome == probe.ERROR or not check.complete:
            why = (
                f"at batch {keep} the step fails where at {full} it does not ({check.error_line()})"
                if check.outcome == probe.ERROR
                else f"its check at batch {keep} could not finish ({check.why or check.outcome})"
            )
            self._kept(origin, full, unit, estimate, report, "passed", why)
            return self._keep(loader, first, f"smaller fails at {keep}")
        first.indices.keep = keep
        _decide(loader, keep)
        if report.trained:
            self.adopt_record(report.step_record)
        if check.trained:
            self.calibration.time_next_step(speed.seconds(check.flops, on, check.written) * scale)
        checked = (
            "shapes, dtypes, devices and memory" if self.memory else "shapes, dtypes and devices"
        )
        line = (
            f"batch {full} → {keep} for arithmetic on this CPU (a full {unit} ≈ "
            f"{_seconds(estimate)}); {checked} checked at {full} on fake tensors "
            f"({_short(origin)})"
        )
        self._said(
            StepCost(
                origin=origin,
                batch_size=full,
                computed_at=keep,
                unit=unit,
                full_s=float(f"{estimate:.3g}"),
                flops=sum(report.flops.values()),
                checked="passed",
                line=line,
            )
        )
        return small

    def _keep(self, loader: DataLoader[Any], first: smaller.FirstBatch, why: str) -> Any:
        """The loader keeps its batch size (the job's log says why): its whole first batch."""
        log.info("step cost: %s kept: %s", first.stats.origin, why)
        _decide(loader, None)
        return first.whole()

    # -- in the probe -----------------------------------------------------------------

    def script_ended(self, exc: BaseException | None) -> None:
        """The script ended (``exc``: how); in a probe this reports and ends the process."""
        running = probe.current()
        if running is not None:
            running.script_ended(exc)

    # -- the decisions ----------------------------------------------------------------

    def _probe(self, make_batch: Callable[[], Any], iterator: Any) -> tuple[probe.ProbeReport, Any]:
        """The probe's report, and None; in the probe, a placeholder and its batch."""
        _import_fake_tensors()
        generator = getattr(iterator, _GENERATOR, lambda: None)()
        return probe.run_probe(
            make_batch, PROBE_TIMEOUT_S, self.describe, self.step_record, self.quiet, generator
        )

    def _failed(
        self, origin: str, full: int, unit: str, estimate: float, report: probe.ProbeReport
    ) -> _Fails:
        line = (
            f"batch {full}: the script's own {unit} at this size fails, found on fake tensors "
            f"before any arithmetic ran ({_short(origin)})"
        )
        self._said(
            StepCost(
                origin=origin,
                batch_size=full,
                computed_at=full,
                unit=unit,
                full_s=float(f"{estimate:.3g}"),
                flops=sum(report.flops.values()) or None,
                checked="failed",
                why=report.error_line(),
                line=line,
            )
        )
        return _Fails(report.found_error())

    def _kept(
        self,
        origin: str,
        full: int,
        unit: str,
        estimate: float,
        report: probe.ProbeReport,
        checked: str,
        why: str,
    ) -> None:
        at_least = "≥ " if not report.complete else ""
        line = (
            f"batch {full} kept (a full {unit} ≈ {at_least}{_seconds(estimate)} on this CPU; "
            f"{_short(origin)}): {why}"
        )
        self._said(
            StepCost(
                origin=origin,
                batch_size=full,
                computed_at=full,
                unit=unit,
                full_s=float(f"{estimate:.3g}"),
                flops=sum(report.flops.values()) or None,
                checked=checked,
                why=why,
                line=line,
            )
        )

    def _said(self, record: StepCost) -> None:
        """Said first: on the script's stderr (the terminal, the editor's output) before the
        step runs, and kept for result.json."""
        self.records.append(record)
        log.info("step cost: %s", record.line)
        print(f"quickdev: {record.line}", file=sys.stderr, flush=True)


class _Fails:
    """The script's error the probe found: raised where the loop takes its batch."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _decide(loader: DataLoader[Any], keep: int | None) -> None:
    object.__setattr__(loader, _DECISION, Decision(keep))


def _unchecked(report: probe.ProbeReport) -> str:
    if report.outcome == probe.ERROR:
        return (
            f"its check on fake tensors failed after a made-up value ({report.made_up}), "
            f"so the step runs at full size to tell ({report.error_line()})"
        )
    return f"its check on fake tensors could not finish ({report.why or report.outcome})"


def _seconds(value: float) -> str:
    if value >= 100:
        return f"{value:.0f} s"
    return f"{value:.2g} s" if value >= 1 else f"{value:.1g} s"


def _short(origin: str) -> str:
    file, _, line = origin.rpartition(":")
    if not file:
        return origin
    try:
        shown = os.path.relpath(file)
    except ValueError:
        shown = file
    if shown.startswith(".."):
        shown = file
    return f"{shown}:{line}"


def _import_fake_tensors() -> None:
    """Fake tensors import torch._dynamo (seconds): once in the job, not in every probe."""
    if "torch._dynamo" in sys.modules:
        return
    started = time.perf_counter()
    import torch._dynamo  # noqa: F401
    from torch._subclasses import fake_tensor  # noqa: F401

    log.info("fake tensors imported in %.2f s", time.perf_counter() - started)


def _bare_describe(exc: BaseException) -> tuple[ErrorInfo, str]:
    return ErrorInfo(type=type(exc).__qualname__, message=str(exc)), ""
