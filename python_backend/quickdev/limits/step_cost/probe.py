"""One pass of the script's own loop body on fake tensors, in a forked copy of the job.

The job forks where a DataLoader hands out the first batch of a pass. The copy (the probe)
pushes ``FakeTensorMode`` (every tensor the script makes from there on has a shape, a
dtype and a device but no storage, and no arithmetic runs), hands the batch to the
script's loop, and lets the script's own code run: its forward, its loss, its backward,
its ``.to(device)`` calls, at the batch's own size. It ends at the optimizer's step (a
training step), at the loop's next batch (an evaluation pass), or where the script
raised, and writes the job one report: the FLOPs counted (``flops.py``), and the error
with its traceback in the script's files if there was one. Nothing it did reaches the
job: it is a copy, it writes no output of the job's, and it ends with ``os._exit``.

Values are what fake tensors lack. A read of one (``loss.item()``, ``if torch.isnan(l)``,
``.numpy()``) is answered with a made-up zero, so the loop goes on; an error after a
made-up value may be the made-up value's doing, so only an error before any is the
script's for certain (``ProbeReport.reliable``). What fake tensors cannot do at all
(an output whose size depends on values, ``x[mask]``) ends the probe short (``stopped``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import select
import signal
import struct
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

from quickdev.limits.closure_steps import closure_of
from quickdev.limits.step_cost.fake_values import (
    FakeValues,
    fake_limitation,
    modes_off,
    real_retry,
)
from quickdev.limits.step_cost.flops import FlopCount
from quickdev.rundir.result import ErrorInfo
from quickdev.rundir.step_cost import ERROR_ELSEWHERE, TRACEBACK_ELSEWHERE

log = logging.getLogger(__name__)

# Outcomes. A pass that reached its end: "step" (the optimizer stepped), "iteration" (the
# loop asked for its next batch, no step: evaluation, or gradients accumulating).
STEP = "step"
ITERATION = "iteration"
ERROR = "error"  # the script raised
STOPPED = "stopped"  # fake tensors could not go on (a size that depends on values)
ENDED = "ended"  # the script or a budget ended before the pass did
NO_FORWARD = "no_forward"  # the loop asked for batches without computing on them
TIMEOUT = "timeout"
NOT_RUN = "not_run"  # the probe could not be started or did not answer

# next() calls answered with the same batch before any computation: a loader wrapper that
# reads ahead (Lightning, accelerate) takes one or two before the step uses the first.
_READ_AHEAD = 3


@dataclass
class ProbeReport:
    outcome: str
    flops: dict[str, int] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)  # bytes by memory (flops.py)
    # ERROR: whether it came before any made-up value (the script's for certain).
    reliable: bool = False
    error: ErrorInfo | None = None
    traceback_text: str = ""  # as Python prints it, for the terminal
    exception: bytes | None = None  # the exception itself, pickled, to raise it as such
    made_up: str | None = None  # the first value made up: "loss.item() at train.py:31"
    why: str | None = None  # STOPPED/ENDED/NOT_RUN: in words
    seconds: float = 0.0
    # The memory forecast's record of the step (limits/forecast_capture.py), pickled.
    step_record: bytes | None = None
    trained: bool = False  # a backward ran: a training step (or a micro-step of one)

    @property
    def complete(self) -> bool:
        return self.outcome in (STEP, ITERATION)

    def error_line(self) -> str:
        """``RuntimeError: shape '[256, -1]' is invalid … at train.py:31`` (one line)."""
        if self.error is None:
            return self.why or self.outcome
        message = self.error.message.strip()
        first = message.splitlines()[0] if message else ""
        file = self.error.file
        where = f" at {os.path.basename(file)}:{self.error.line}" if file else ""
        return f"{self.error.type}: {first}{where}"

    def found_error(self) -> BaseException:
        """The probe's error as an exception of this process, reported with the probe's
        frames (where it happened) and message."""
        exc: BaseException | None = None
        if self.exception is not None:
            with contextlib.suppress(Exception):
                exc = pickle.loads(self.exception)
        if not isinstance(exc, BaseException):
            exc = RuntimeError(self.error.message if self.error else "the step failed")
        setattr(exc, ERROR_ELSEWHERE, self.error)
        setattr(exc, TRACEBACK_ELSEWHERE, self.traceback_text)
        return exc


# ---------------------------------------------------------------- the job's side


def run_probe(
    make_batch: Callable[[], Any],
    timeout_s: float,
    describe: Callable[[BaseException], tuple[ErrorInfo, str]],
    step_record: Callable[[], bytes | None],
    quiet: Callable[[], None],
    held: Any = None,
) -> tuple[ProbeReport, Any]:
    """Fork; in the job, wait for the probe's report (at most ``timeout_s``) and return it
    with None. In the probe, return a report-less placeholder and the batch the loader
    hands the script there (``make_batch``'s, made under fake tensors: the probe's
    ``batches`` hand it on); ``held``: the pass's generator, which the probe keeps alive."""
    if not hasattr(os, "fork"):
        return ProbeReport(NOT_RUN, why="this platform cannot fork"), None
    read_end, write_end = os.pipe()
    started = time.perf_counter()
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(read_end)
        os.close(write_end)
        return ProbeReport(NOT_RUN, why=f"cannot fork ({exc.strerror or exc})"), None
    if pid == 0:
        os.close(read_end)
        probe = Probe(write_end, describe, step_record)
        probe.hold(held)
        quiet()
        probe.start()
        try:
            batch = make_batch()
        except BaseException as exc:  # a dataset or collate error at the full size
            probe.script_ended(exc)
        return ProbeReport(NOT_RUN), batch
    os.close(write_end)
    try:
        report = _wait(read_end, pid, timeout_s)
    finally:
        os.close(read_end)
    report.seconds = round(time.perf_counter() - started, 3)
    return report, None


def _wait(read_end: int, pid: int, timeout_s: float) -> ProbeReport:
    deadline = time.monotonic() + timeout_s
    data = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            _kill(pid)
            return ProbeReport(TIMEOUT, why=f"no answer within {timeout_s:g} s")
        ready, _, _ = select.select([read_end], [], [], left)
        if not ready:
            continue
        chunk = os.read(read_end, 1 << 16)
        if not chunk:
            break
        data += chunk
    _reap(pid)
    if len(data) < 4:
        return ProbeReport(NOT_RUN, why="the check ended without a report")
    (size,) = struct.unpack("!I", data[:4])
    try:
        report = pickle.loads(bytes(data[4 : 4 + size]))
    except Exception as exc:  # a report we wrote ourselves: an error of ours
        log.warning("unreadable step-cost report", exc_info=exc)
        return ProbeReport(NOT_RUN, why="its report could not be read")
    return report if isinstance(report, ProbeReport) else ProbeReport(NOT_RUN)


def _kill(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    _reap(pid)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, 0)


# ---------------------------------------------------------------- the probe's side

# The probe running in this process, if this process is one.
_probe: Probe | None = None


def current() -> Probe | None:
    return _probe


class Probe:
    """The forked copy's state: what it pushed, what it counted, and how it ends."""

    def __init__(
        self,
        write_end: int,
        describe: Callable[[BaseException], tuple[ErrorInfo, str]],
        step_record: Callable[[], bytes | None],
    ) -> None:
        self.write_end = write_end
        self.describe = describe
        self.step_record = step_record
        self.counter = FlopCount()
        self.values = FakeValues()
        self.asked = 0
        self.started = time.perf_counter()
        self.held: Any = None

    def start(self) -> None:
        global _probe
        _probe = self
        _quiet()
        # Nothing here computes (fake tensors), and OpenMP's threads did not survive the
        # fork: one thread keeps torch from waiting for them.
        torch.set_num_threads(1)
        from torch._subclasses.fake_tensor import FakeTensorMode

        register_optimizer_step_pre_hook(self._before_step)
        self.counter.on_error = real_retry
        FakeTensorMode(allow_non_fake_inputs=True).__enter__()
        self.counter.__enter__()  # type: ignore[no-untyped-call]
        self.values.__enter__()  # type: ignore[no-untyped-call]

    def batches(self, batch: Any) -> Iterator[Any]:
        """What the loader hands the script in the probe: the batch, then the end."""
        try:
            while True:
                yield batch
                self.asked += 1
                if self.counter.ops or self.asked >= _READ_AHEAD:
                    self.pass_over()
        except GeneratorExit:  # a framework closed the pass (held: not by an exception)
            self.pass_over()

    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> Any:
        """The step's forward and backward ran: the probe ends before the update (which
        does not depend on the batch). A closure optimizer runs them in its step: there
        the probe ends once the closure has."""
        closure = closure_of(args, kwargs)
        if closure is None:
            self.finish(STEP)

        def then_end() -> Any:
            closure()
            self.finish(STEP)

        if "closure" in kwargs:
            return args, {**kwargs, "closure": then_end}
        return (args[0], then_end, *args[2:]), kwargs

    def hold(self, generator: Any) -> None:
        """Keep the pass's generator alive: an exception leaving the script's loop would
        otherwise close it, which looks like the loop's end."""
        self.held = generator

    def pass_over(self) -> None:
        """The pass went on to its next batch, or the script left it (a ``break``, another
        loader's pass): the one batch's work is done."""
        self.finish(ITERATION if self.counter.ops else NO_FORWARD)

    def script_ended(self, exc: BaseException | None) -> None:
        """The script raised, or ended, before the pass did."""
        if exc is None or isinstance(exc, SystemExit):
            if self.counter.ops:
                self.pass_over()  # it left the loop (a break) and ran to its end
            self.finish(ENDED, why="the script ended before the step")
        if type(exc).__name__ in ("StopJob", "JobKilled"):
            self.finish(ENDED, why=f"the job ended ({exc})")
        assert exc is not None
        limitation = fake_limitation(exc)
        if limitation is not None:
            self.finish(STOPPED, why=limitation, exc=exc)
        self.finish(ERROR, exc=exc)

    def finish(
        self, outcome: str, why: str | None = None, exc: BaseException | None = None
    ) -> None:
        """Write the report and end this process (never returns)."""
        # In the job's log: why a probe ended where it did, with the traceback.
        log.info(
            "step-cost probe %d: %s%s",
            os.getpid(),
            outcome,
            f" ({why})" if why else "",
            exc_info=exc,
        )
        try:
            with modes_off():
                report = ProbeReport(
                    outcome,
                    flops=dict(self.counter.flops),
                    written=dict(self.counter.written),
                    made_up=self.values.first,
                    why=why,
                    seconds=round(time.perf_counter() - self.started, 3),
                    reliable=self.values.first is None,
                    trained=self.values.backwards > 0,
                )
                if exc is not None:
                    report.error, report.traceback_text = self.describe(exc)
                    with contextlib.suppress(Exception):
                        report.exception = pickle.dumps(exc)
                if report.complete and report.trained:
                    with contextlib.suppress(Exception):
                        report.step_record = self.step_record()
                data = pickle.dumps(report)
                _write_all(self.write_end, struct.pack("!I", len(data)) + data)
        except BaseException:  # never back into the script's code
            log.exception("the step-cost check could not report")
        finally:
            os._exit(0)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _quiet() -> None:
    """The probe's prints and tracebacks are not the script's output."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (the process's own)
    # torch logs the errors of fake kernels; the user's logging config prints to stderr.
    logging.getLogger("torch").setLevel(logging.CRITICAL)
