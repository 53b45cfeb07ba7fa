"""The wall-clock alarm and the kill handlers, installed in this process and undone."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType

import pytest
from quickdev.job.signals import JobKilled, install_kill_handlers, install_timeout_alarm
from quickdev.limits.budget import StopJob
from quickdev.limits.patching import Patcher

from tests.support.budgets import make_budget


@pytest.fixture
def own_alarm() -> Iterator[object]:
    """An alarm already set when the job starts (pytest-timeout sets one too); whatever was
    set before this test is put back after it."""
    before_handler = signal.getsignal(signal.SIGALRM)
    before_delay, before_interval = signal.getitimer(signal.ITIMER_REAL)

    def handler(signum: int, frame: FrameType | None) -> None:
        raise AssertionError("the earlier alarm fired during the job")

    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 30.0)
    yield handler
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, before_handler)
    if before_delay > 0:
        signal.setitimer(signal.ITIMER_REAL, before_delay, before_interval)


def test_the_alarm_stops_a_hanging_script_then_the_earlier_alarm_is_back(
    own_alarm: object,
) -> None:
    patcher = Patcher()
    install_timeout_alarm(make_budget(max_steps=None, timeout_s=0.1), patcher)
    started = time.monotonic()
    try:
        with pytest.raises(StopJob) as stopped:
            time.sleep(20)  # no DataLoader, no step: only the alarm can end it
    finally:
        patcher.undo_all()
    assert stopped.value.reason == "timeout"
    assert time.monotonic() - started < 5
    assert signal.getsignal(signal.SIGALRM) is own_alarm
    delay, _ = signal.getitimer(signal.ITIMER_REAL)
    assert 20 < delay < 30  # the earlier alarm, less the time the job took


def test_no_alarm_without_a_timeout_or_off_the_main_thread() -> None:
    handler = signal.getsignal(signal.SIGALRM)
    delay = signal.getitimer(signal.ITIMER_REAL)[0]
    patcher = Patcher()
    install_timeout_alarm(make_budget(max_steps=None, timeout_s=None), patcher)
    failures: list[BaseException] = []

    def in_a_thread() -> None:  # a job run by the API from a worker thread
        try:
            install_timeout_alarm(make_budget(max_steps=None, timeout_s=0.01), patcher)
        except BaseException as exc:  # signal.signal raises off the main thread
            failures.append(exc)

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    assert failures == []
    assert signal.getsignal(signal.SIGALRM) is handler
    assert signal.getitimer(signal.ITIMER_REAL)[0] <= delay
    time.sleep(0.05)  # an alarm of 0.01 s, had it been set, would have raised here


def test_a_kill_signal_becomes_job_killed_and_undo_restores_the_handlers() -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    patcher = Patcher()
    install_kill_handlers(patcher)
    try:
        # Never send a real signal to the test process unless our handler is in place.
        assert all(signal.getsignal(s) is not before[s] for s in before)
        with pytest.raises(JobKilled) as killed:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    finally:
        patcher.undo_all()
    assert killed.value.signum == signal.SIGTERM
    assert str(killed.value) == "SIGTERM"
    assert {s: signal.getsignal(s) for s in before} == before
