"""Job events: how the job tells observers (profiler, scalars, progress) what happens.

The job registers its observers from one list (``quickdev.job.observers``). It calls
``on_setup`` once they are all added, before the user's code runs (a profiler starts
there, so everything up to the first step is covered), and ``on_result`` after the
script ended, so an observer can put what it measured into the result. The limits fire
the others from the user's unmodified code: a batch fetched
from a DataLoader, a training step (an optimizer step, or a training-mode forward
of the top module where there is no optimizer), a loss that ``.backward()`` was
called on. Observers must be cheap and must never raise into the user's code: one
that fails is Quickdev's error, which the job's verdict says (``feature`` names it).
"""

from __future__ import annotations

import logging
from typing import Protocol

from quickdev import problems, unwritten
from quickdev.rundir.result import JobResult

log = logging.getLogger(__name__)


class JobObserver(Protocol):
    # What the observer does, in words a person reads when it fails ("the profiler").
    feature: str

    def on_setup(self) -> None: ...
    def on_job_start(self) -> None: ...
    def on_batch(self, origin: str, wait_s: float) -> None: ...
    def on_train_step(self, step: int, step_time_s: float) -> None: ...
    def on_loss(self, step: int, value: float) -> None: ...
    def on_job_end(self) -> None: ...
    def on_result(self, result: JobResult) -> None: ...


class BaseObserver:
    """Does nothing; subclass and override what you need, and name what it does:
    ``class Profiler(BaseObserver, feature="the profiler")``."""

    feature = "a job observer"

    def __init_subclass__(cls, feature: str | None = None, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if feature is not None:
            cls.feature = feature

    def on_setup(self) -> None:
        pass

    def on_job_start(self) -> None:
        pass

    def on_batch(self, origin: str, wait_s: float) -> None:
        pass

    def on_train_step(self, step: int, step_time_s: float) -> None:
        pass

    def on_loss(self, step: int, value: float) -> None:
        pass

    def on_job_end(self) -> None:
        pass

    def on_result(self, result: JobResult) -> None:
        pass


class EventHub:
    """Fans events out to observers; an observer's failure is logged, never raised."""

    def __init__(self) -> None:
        self._observers: list[JobObserver] = []

    def add(self, observer: JobObserver) -> None:
        self._observers.append(observer)

    def keep_only(self, kept: list[JobObserver]) -> None:
        """Only ``kept`` hear from now on: in a copy of the job that must not report (a
        step-cost probe, ``limits/step_cost``)."""
        self._observers = [o for o in self._observers if any(o is k for k in kept)]

    def setup(self) -> None:
        for o in self._observers:
            self._safely(o.on_setup)

    def job_start(self) -> None:
        for o in self._observers:
            self._safely(o.on_job_start)

    def batch(self, origin: str, wait_s: float) -> None:
        for o in self._observers:
            self._safely(o.on_batch, origin, wait_s)

    def train_step(self, step: int, step_time_s: float) -> None:
        for o in self._observers:
            self._safely(o.on_train_step, step, step_time_s)

    def loss(self, step: int, value: float) -> None:
        for o in self._observers:
            self._safely(o.on_loss, step, value)

    def job_end(self) -> None:
        for o in self._observers:
            self._safely(o.on_job_end)

    def result(self, result: JobResult) -> None:
        for o in self._observers:
            self._safely(o.on_result, result)

    @staticmethod
    def _safely(fn: object, *args: object) -> None:
        try:
            fn(*args)  # type: ignore[operator]
        except Exception as exc:
            observer = getattr(fn, "__self__", None)
            feature = getattr(observer, "feature", None) or "a job observer"
            if unwritten.disk_full(exc):
                # Not Quickdev's fault, nor the script's: said with the job's other files
                # that did not fit, in one line.
                log.warning("%s: %s", feature, exc)
                unwritten.failed(getattr(exc, "filename", None) or feature, exc)
                return
            log.exception("job observer failed: %s", feature)
            problems.own_error(feature, exc)
