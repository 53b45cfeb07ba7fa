"""The wall-clock alarm and the kill handlers, installed in this process and undone."""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from quickdev.job.signals import (
    JobKilled,
    fork_holding_stops,
    install_kill_handlers,
    install_timeout_alarm,
)
from quickdev.limits import stop_delivery
from quickdev.limits.budget import StopJob
from quickdev.limits.loops.library import tracing_free
from quickdev.limits.patching import Patcher
from quickdev.limits.stop_delivery import raising_is_safe

from tests.support.budgets import make_budget
from tests.support.native_callback import SLOW_IMPORT, SLOW_SORT, library_module


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


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_kill_signal_during_a_fork_stops_the_job_once_fork_returns(signum: int) -> None:
    # Python runs the handler inside fork's own hooks (logging's, here), where an exception
    # is printed and dropped: a Ctrl+C that came while the job forked (its step-cost check
    # does, at a loader's first batch) was lost. The signal is sent from a hook of fork's
    # own, the moment it can only land inside the fork.
    armed = [True]

    def signal_inside_fork() -> None:
        if armed and armed.pop():
            os.kill(os.getpid(), signum)

    os.register_at_fork(before=signal_inside_fork)  # one-shot: hooks cannot be removed
    patcher = Patcher()
    install_kill_handlers(patcher)
    pid = 0
    try:
        with pytest.raises(JobKilled) as killed:
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            time.sleep(5)  # the signal lost: no stop comes
    finally:
        armed.clear()
        patcher.undo_all()
    assert killed.value.signum == signum
    assert killed.traceback[-1].name == "fork_holding_stops"  # as fork returned
    assert os.fork is not fork_holding_stops  # the job's undo puts os.fork back


needs_a_free_trace = pytest.mark.skipif(
    not tracing_free(), reason="a debugger or another tracer holds the line trace here"
)


@needs_a_free_trace
def test_a_timeout_inside_a_native_callback_stops_at_the_next_line_of_the_users_code(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    spec = library_module(tmp_path, "slow_sort", SLOW_SORT)
    library = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(library)
    patcher = Patcher()
    install_timeout_alarm(make_budget(max_steps=None, timeout_s=0.1), patcher)
    after_the_sort = False
    try:
        stop_delivery.script_starting()
        with pytest.raises(StopJob) as stopped:
            library.sort_for(0.5)  # the alarm falls in the comparator, called from C
            after_the_sort = True
    finally:
        patcher.undo_all()
    assert stopped.value.reason == "timeout"
    # The sort ran to its end (nothing dropped a stop inside it), the line after it did not.
    assert len(library.compared) >= 0.5 / 0.02 / 2
    assert not after_the_sort
    assert "Exception ignored" not in capfd.readouterr().err
    assert sys.gettrace() is None


@needs_a_free_trace
def test_a_timeout_during_a_librarys_import_stops_after_the_import(tmp_path: Path) -> None:
    spec = library_module(tmp_path, "slow_import", SLOW_IMPORT)
    patcher = Patcher()
    install_timeout_alarm(make_budget(max_steps=None, timeout_s=0.1), patcher)
    module = importlib.util.module_from_spec(spec)
    try:
        stop_delivery.script_starting()
        with pytest.raises(StopJob):
            spec.loader.exec_module(module)  # native module initialisation stands here
            time.sleep(20)
    finally:
        patcher.undo_all()
    assert module.done  # its import code ran to its end: no half-made module


def test_a_timeout_during_the_set_up_is_raised_as_the_script_starts_with_no_trace_meanwhile(
    tmp_path: Path,
) -> None:
    spec = library_module(tmp_path, "slow_import", SLOW_IMPORT)
    patcher = Patcher()
    install_timeout_alarm(make_budget(max_steps=None, timeout_s=0.1), patcher)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)  # the job's imports: the alarm falls here
        assert sys.gettrace() is None  # the rest of the set-up is not slowed by a trace
        with pytest.raises(StopJob):
            stop_delivery.script_starting()
    finally:
        patcher.undo_all()
    assert module.done


def test_the_users_own_frames_take_the_stop_at_once() -> None:
    assert raising_is_safe(sys._getframe())
