"""The quick-dev job: set up the run directory and limits, run the user's code, write the result.

Order matters: the run directory and a ``running`` result exist before torch is
imported (the language server polls for them); torch (and Lightning) are imported
before debugpy starts (its tracing makes imports about twice as slow); the limits
are installed before the first line of the user's code runs.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from quickdev import problems, unwritten
from quickdev.events import EventHub
from quickdev.job import output_tee, signals
from quickdev.job.advice import advice_for
from quickdev.job.debug_pauses import paused_s
from quickdev.job.failure import describe, record_exit, user_traceback
from quickdev.job.hard_stop import (
    FINISH_LIMIT_S,
    SERVER_GONE_STOP,
    TIMEOUT_STOP,
    Ending,
    HardStop,
    end_limits,
    finish_too_long,
    hard_stop,
)
from quickdev.job.heavy_imports import import_heavy_modules
from quickdev.job.progress import ProgressWriter
from quickdev.job.recorded import copy_recorded, settle_verdict
from quickdev.job.signals import JobKilled
from quickdev.job.target import ModuleTarget, ScriptTarget, Target, UsageProblem
from quickdev.job.terminal_summary import summarize
from quickdev.limits import stop_delivery
from quickdev.limits.budget import NONFINITE, Budget, StopJob
from quickdev.limits.nonfinite.found import NonFiniteFound
from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder
from quickdev.options import RunOptions
from quickdev.processes import EXIT_FAILED, EXIT_PASSED, EXIT_USAGE, peak_rss_mb
from quickdev.rundir.ids import create_run_dir, iso_utc, new_run_id
from quickdev.rundir.layout import LOG_FILE
from quickdev.rundir.option_table import STEP_SECONDS
from quickdev.rundir.process import write_process_record
from quickdev.rundir.result import ErrorInfo, JobResult
from quickdev.rundir.retention import prune_runs

if TYPE_CHECKING:
    from quickdev.job.children.following import FollowedChildren

log = logging.getLogger(__name__)


@dataclass
class JobOutcome:
    result: JobResult
    exit_code: int
    usage_message: str | None = None  # set for a usage error: the one line to print


def run_from_cli(options: RunOptions) -> int:
    outcome = run_job(options, target_from_options(options), in_process=False)
    if outcome.usage_message:
        print(outcome.usage_message, file=sys.stderr)
    elif not options.print_json:
        print(summarize(outcome.result), file=sys.stderr)
    not_written = unwritten.line(outcome.result.run_dir)
    if not_written:
        print(not_written, file=sys.stderr)
    if options.print_json:
        sys.stdout.flush()
        out = sys.__stdout__ or sys.stdout
        if output_tee.stdout_mid_line():
            out.write("\n")
        out.write(json.dumps(outcome.result.to_dict(), default=str) + "\n")
        out.flush()
    return outcome.exit_code


def target_from_options(options: RunOptions) -> Target:
    if options.module:
        return ModuleTarget(options.module, list(options.args))
    return ScriptTarget(options.script or "", list(options.args))


def check_before_start(options: RunOptions, target: Target) -> None:
    """What makes the job a usage error (exit 2) before the script runs."""
    target.check()
    if options.device not in ("auto", "cpu"):
        from quickdev.limits.device import DeviceUnavailable, resolve_device

        try:
            resolve_device(options.device)
        except DeviceUnavailable as exc:
            raise UsageProblem(f"quickdev run: {exc}") from None


def run_job(options: RunOptions, target: Target, *, in_process: bool) -> JobOutcome:
    started = time.perf_counter()
    if not in_process and not options.keep_outputs:
        # The file journal's process, forked while this process is small and runs one
        # thread: a millisecond, where a new interpreter costs 0.05 s of CPU.
        from quickdev.limits.journal.process import fork_ahead

        fork_ahead()
    unwritten.reset()
    # The job's limits, decided once; result.json reports them as they are at its end.
    budget = Budget.for_options(options)
    result = JobResult(
        id="",
        started=iso_utc(),
        cwd=os.getcwd(),
        limits=budget.result_limits(options),
        keep_outputs=options.keep_outputs,
    )
    usage: UsageProblem | None = None
    try:
        check_before_start(options, target)
    except UsageProblem as exc:
        usage = exc
    result.id = options.run_id or new_run_id(options.name or target.label)
    result.script = target.description
    result.argv = target.argv()
    try:
        run_dir = create_run_dir(options.runs_dir, result.id)
        result.run_dir = str(run_dir)
        result.write(run_dir)
        prune_runs(run_dir.parent, options.retention, protect=frozenset({result.id}))
    except OSError as exc:
        message = (
            f"quickdev run: cannot write the run directory under {options.runs_dir} "
            f"({exc.strerror or exc}); pass --runs-dir with a writable directory"
        )
        result.status = "failed"
        result.error = ErrorInfo(type="UsageError", message=message)
        return JobOutcome(result, EXIT_USAGE, usage_message=str(usage or message))
    if usage is not None:
        result.status = "failed"
        result.error = ErrorInfo(type="UsageError", message=str(usage))
        unwritten.write_result(result, run_dir)
        return JobOutcome(result, EXIT_USAGE, usage_message=str(usage))

    logger = logging.getLogger("quickdev")
    saved_logger = (logger.level, logger.propagate)
    handler = _log_to(run_dir)
    log.info("%s", _how_started(options))
    patcher = Patcher()
    saved_sys = (list(sys.argv), list(sys.path))
    exit_code = EXIT_FAILED
    try:
        exit_code = _run_with_limits(options, target, run_dir, result, budget, patcher, in_process)
    finally:
        # A debug run's time held at breakpoints is the person's, not the script's.
        result.paused_s = round(paused_s(), 3)
        result.duration_s = round(time.perf_counter() - started - result.paused_s, 3)
        result.peak_rss_mb = peak_rss_mb()
        unwritten.write_result(result, run_dir)
        log.info("job ended: %s (exit %d) in %.2f s", result.status, exit_code, result.duration_s)
        patcher.undo_all()
        if in_process:
            sys.argv[:], sys.path[:] = saved_sys
        logger.removeHandler(handler)
        logger.setLevel(saved_logger[0])
        logger.propagate = saved_logger[1]
        handler.close()
    return JobOutcome(result, exit_code)


def _run_with_limits(
    options: RunOptions,
    target: Target,
    run_dir: Path,
    result: JobResult,
    budget: Budget,
    patcher: Patcher,
    in_process: bool,
) -> int:
    """Everything after the run directory exists; returns the exit code."""
    started = time.perf_counter()
    problems.take()  # an earlier in-process job's are its own
    hub = EventHub()
    progress = ProgressWriter(run_dir)
    patcher.on_undo(progress.stop)
    recorder: Recorder | None = None
    followed: FollowedChildren | None = None
    exit_code = EXIT_FAILED
    exited_at: ErrorInfo | None = None  # where the script called sys.exit(0)
    after_training = False  # a budget stopped the script as it evaluated after training
    ending = Ending()
    cancel_hard_stop: Callable[[], None] = lambda: None  # noqa: E731
    try:
        if not in_process:
            write_process_record(run_dir)
            signals.install_kill_handlers(patcher)
            output_tee.install(patcher, run_dir)
        budget.start()
        signals.install_timeout_alarm(budget, patcher)
        if not in_process:

            def stop_hard(stop: HardStop) -> Callable[[], None]:
                return lambda: ending.hard_stop(
                    lambda: hard_stop(
                        run_dir, result, recorder, followed, stop, started, options.print_json
                    )
                )

            cancel_hard_stop = signals.start_hard_stop(budget, stop_hard(TIMEOUT_STOP))
            patcher.on_undo(cancel_hard_stop)
            patcher.on_undo(signals.start_server_watchdog(stop_hard(SERVER_GONE_STOP)))
        progress.write()
        imported_early = import_heavy_modules(options, target, in_process=in_process)
        _note_environment(result)

        from quickdev.limits.install import install_limits

        installed = install_limits(
            options, run_dir, hub, budget, patcher, imported_early, in_process=in_process
        )
        recorder = installed.recorder
        step_cost = installed.step_cost
        if step_cost is not None:
            step_cost.describe = lambda exc: (describe(exc), user_traceback(exc))
        else:
            # No step ran at a smaller batch here: result.json says the job had no bound.
            result.limits.values[STEP_SECONDS] = None
        from quickdev.job.children.following import follow
        from quickdev.job.children.setup import Setup

        setup = Setup(run_dir, options, target.description)
        followed = follow(patcher, setup, recorder, budget, job_process=not in_process)
        result.limits.device = installed.device
        from quickdev.job.observers import job_observers

        for observer in job_observers(options, run_dir, progress):
            hub.add(observer)
        hub.setup()
        _start_debug_hooks(options, run_dir, in_process, lambda: _lift_wall_clock(budget))

        log.info("running %s %s", target.description, target.argv()[1:])
        hub.job_start()
        stop_delivery.script_starting()  # a timeout during the set-up stops the job here
        try:
            target.run(installed.rewriter)
        except BaseException as exc:
            if step_cost is not None:  # in a step-cost probe, this ends its process
                step_cost.script_ended(exc)
            raise
        else:
            if step_cost is not None:
                step_cost.script_ended(None)
        finally:
            signals.cancel_timeout_alarm()
        # Ran to its end, also where budgets ended its loops (result.loops_ended).
        result.status, result.stop_reason, exit_code = "passed", "completed", EXIT_PASSED
    except StopJob as stop:
        result.status, result.stop_reason, exit_code = "stopped", stop.reason, EXIT_PASSED
        after_training = recorder is not None and recorder.trained_then_evaluated()
    except NonFiniteFound as found:
        # The hunt's answer is a failure of the script, at the line that made the value.
        result.status, result.stop_reason, exit_code = "failed", NONFINITE, EXIT_FAILED
        result.error = found.error()
        from quickdev.job.debugger import stop_at_nonfinite

        stop_at_nonfinite(found)
    except JobKilled as killed:
        result.status, result.stop_reason = "killed", killed.reason
        exit_code = 128 + killed.signum
    except SystemExit as exc:
        exit_code = record_exit(result, exc)
        if exit_code == EXIT_PASSED:
            exited_at = describe(exc)
    except KeyboardInterrupt as exc:  # in-process: Ctrl+C in a notebook
        result.status, result.stop_reason = "killed", "KeyboardInterrupt"
        result.error = describe(exc)
        exit_code = 130
    except BaseException as exc:
        result.status, result.stop_reason = "failed", "error"
        result.error = describe(exc)
        log.info("the script failed", exc_info=exc)
        if not in_process:
            # As `python train.py` would: the traceback on the script's stderr.
            print(user_traceback(exc), end="", file=sys.stderr, flush=True)
        from quickdev.job.debugger import stop_at_failure

        stop_at_failure(exc)
    finally:
        try:
            signals.cancel_timeout_alarm()
            if not in_process:
                signals.ignore_further_kills()
            # The deadline bounded the script; what follows is bounded as hard_stop.py says.
            ending.script_ended()
            cancel_hard_stop()
        finally:
            # The person's files first: however the lines above ended (a print of the
            # traceback on a full disk), before the job writes anything of its own.
            _restore(result, recorder, followed)
    if not in_process:  # the user's files are back: from here a stuck step may be cut
        patcher.on_undo(
            signals.start_backstop(
                FINISH_LIMIT_S,
                lambda: True,
                lambda: finish_too_long(run_dir, result, started, options.print_json, exit_code),
                "quickdev-finish-limit",
            )
        )
    copy_recorded(result, recorder)
    if followed is not None and followed.merge(result):
        exit_code = EXIT_FAILED
    # The knob that would have made what the budget ended short (the steps the job made are
    # in the result by now: they say what ran out).
    if result.status == "stopped" and result.stop_reason:
        result.stop_advice = advice_for(result.stop_reason, target, options, result, after_training)
    elif result.status == "passed" and result.loops_ended:
        result.stop_advice = advice_for(result.loops_ended[0].budget, target, options, result)
    hub.job_end()
    hub.result(result)
    exit_code = settle_verdict(
        result, recorder, exit_code, main=True, script=target.source(), exited_at=exited_at
    )
    progress.set_stage("done")
    return exit_code


def _restore(
    result: JobResult, recorder: Recorder | None, followed: FollowedChildren | None
) -> None:
    """The processes the script started end, then the user's files are put back; the
    restore runs whatever ending them did."""
    try:
        if followed is not None:
            followed.end(script_passed=result.status == "passed")
    finally:
        end_limits(result, recorder)


def _note_environment(result: JobResult) -> None:
    """The job's torch, and one line where it or the Python is one quickdev is not tested
    with: a failure there may be quickdev's."""
    from quickdev.torch_compat import untested_environment

    result.torch_version = str(getattr(sys.modules.get("torch"), "__version__", ""))
    result.untested_environment = untested_environment(result.torch_version)
    if result.untested_environment:
        log.warning("%s", result.untested_environment)


def _lift_wall_clock(budget: Budget) -> None:
    """A debugger attached: a person stepping through code is not a runaway loop, so the
    wall clock (alarm and hard stop) no longer ends the job; result.json says so (its
    limits are the budget's)."""
    if budget.timeout_s is None:
        return
    budget.lift_deadline()
    signals.cancel_timeout_alarm()
    log.info("a debugger attached: the wall-clock budget is lifted")


def _start_debug_hooks(
    options: RunOptions, run_dir: Path, in_process: bool, on_attach: Callable[[], None]
) -> None:
    """The one place where debugging support joins the job (after heavy imports)."""
    if not in_process:
        # Accept a debugger later, on SIGUSR1 (`quickdev attach --run RUN_DIR`). Not in
        # the in-process API: the caller's own signal handling stays as it was.
        from quickdev.job.attach_handler import install_attach_handler

        install_attach_handler(run_dir, on_attach)
    if options.listen is not None:
        from quickdev.job.debugger import start_debugger

        start_debugger(options.listen, options.wait_for_client, run_dir, options.client_timeout_s)


def _how_started(options: RunOptions) -> str:
    """Warm (forked from a process with the imports done) or cold: the one line that tells
    a slow or odd run's cause apart."""
    if options.warm is None:
        return "started cold"
    return f"started warm: forked from warm process {options.warm.forked_from}"


def _log_to(run_dir: Path) -> logging.Handler:
    handler = unwritten.LogFile(run_dir / LOG_FILE, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("quickdev")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    # The job's log is ours; a script's logging.basicConfig must not print it.
    logger.propagate = False
    return handler
