"""Quick-dev on torch.distributed: N local ranks under ``torch.distributed.run``.

``quickdev run --nproc N SCRIPT`` does not run the script itself. It starts torchrun
(standalone, one node, N ranks; the script picks its backend, gloo on CPU), and every
rank runs this module, which turns into an ordinary quick-dev job with its own run
directory ``RUN_DIR/rank<R>/``: the limits hold in every rank and each writes its
own result. When torchrun ends, this parent merges the ranks' results into
``RUN_DIR/result.json`` and moves the ranks' profiler traces into ``RUN_DIR``, so
TensorBoard's profiler plugin sees one run with N workers (its distributed view).

A rank that fails makes its peers fail at their next collective; torchrun then stops
the rest, and the parent kills whatever is left after a short grace period, so a
failure never turns into a hang. The merged result carries the error of the rank
that failed first.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from quickdev.job.distributed.merge import initial_result, merge_results
from quickdev.job.distributed.rank import OPTIONS_ENV, RUN_DIR_ENV
from quickdev.job.signals import install_signal_handler
from quickdev.limits.patching import Patcher
from quickdev.options import RunOptions, options_to_json
from quickdev.processes import EXIT_FAILED, EXIT_PASSED, EXIT_USAGE, exit_status
from quickdev.rundir.ids import create_run_dir, new_run_id
from quickdev.rundir.jsonio import read_json_object, write_json
from quickdev.rundir.layout import DEBUGPY_FILE, RESULT_FILE, rank_dir_name
from quickdev.rundir.process import write_process_record
from quickdev.rundir.result import ErrorInfo, JobResult, read_result

FAILURE_GRACE_S = 5.0  # after a rank fails: time for the others to end on their own
POLL_S = 0.1
LOOPBACK = "127.0.0.1"  # a quick-dev job's ranks are local: nothing listens beyond this


def run_distributed(options: RunOptions) -> int:
    """Run the job under torchrun with ``options.nproc`` local ranks; returns the exit code."""
    started = time.time()
    stem = options.name or Path(options.script or options.module or "job").stem
    run_id = options.run_id or new_run_id(stem)
    run_dir = create_run_dir(options.runs_dir, run_id)
    write_process_record(run_dir)
    # Readers poll result.json from the start, as for any job.
    initial = initial_result(run_dir, options, started)
    initial.write(run_dir)
    from quickdev.job.job import check_before_start, target_from_options
    from quickdev.job.target import UsageProblem

    try:
        # A missing script is one line from here, not N ranks failing under torchrun.
        check_before_start(options, target_from_options(options))
    except UsageProblem as exc:
        initial.status = "failed"
        initial.error = ErrorInfo(type="UsageError", message=str(exc))
        initial.write(run_dir)
        print(str(exc), file=sys.stderr)
        return EXIT_USAGE
    launch = [
        # torchrun with its stores on loopback; ranks and gloo on loopback too (below).
        sys.executable, "-m", "quickdev.job.distributed.loopback",
        "--standalone", "--local-addr", LOOPBACK,
        "--nnodes", "1", "--nproc-per-node", str(options.nproc),
        "--monitor-interval", str(POLL_S),
        "-m", "quickdev.job.distributed.rank",
    ]  # fmt: skip
    env = {
        **os.environ,
        OPTIONS_ENV: options_to_json(options),
        RUN_DIR_ENV: str(run_dir),
        # torchrun warns about thread counts on every start; one thread per rank on a
        # laptop CPU is what quick-dev wants anyway.
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
        # gloo's pairs listen on the address of this interface.
        "GLOO_SOCKET_IFNAME": os.environ.get("GLOO_SOCKET_IFNAME", "lo"),
        "MASTER_ADDR": LOOPBACK,
    }
    # A new session, so a failure can stop torchrun and every rank with one signal.
    proc = subprocess.Popen(launch, env=env, stderr=subprocess.PIPE, start_new_session=True)
    pump, stderr_tail = _tee_stderr(proc)
    # torchrun runs in its own session, so a signal to this process (a timeout, the
    # language server cancelling) must be passed on, or the ranks outlive the job.
    patcher = Patcher()
    install_signal_handler(patcher, (signal.SIGTERM, signal.SIGHUP), _raise_interrupt)
    try:
        _watch(proc, run_dir, options)
    except KeyboardInterrupt:
        _stop_group(proc)
    finally:
        patcher.undo_all()
    pump.join(timeout=5)
    merged = merge_results(
        run_dir, options, started=started, launcher_code=proc.returncode, stderr=stderr_tail
    )
    write_json(run_dir / RESULT_FILE, merged, indent=2)
    if options.print_json:
        print(json.dumps(merged, default=str), flush=True)
    else:
        print(_summary(merged), file=sys.stderr, flush=True)
    script_code = EXIT_PASSED if merged["status"] in ("passed", "stopped") else EXIT_FAILED
    return exit_status(merged["status"], script_code)


def _summary(merged: dict[str, Any]) -> str:
    """The terminal summary of the merged result, and a line per rank."""
    from quickdev.job.terminal_summary import summarize

    ranks = ", ".join(f"rank {r['rank']} {r['status']}" for r in merged["ranks"])
    return f"{summarize(JobResult.from_dict(merged))}\n  ranks: {ranks}"


def _raise_interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _tee_stderr(
    proc: subprocess.Popen[bytes],
) -> tuple[threading.Thread, collections.deque[str]]:
    """Pass torchrun's stderr through, keeping the tail for a launch failure's message."""
    tail: collections.deque[str] = collections.deque(maxlen=40)

    def pump() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode(errors="replace")
            tail.append(line.rstrip("\n"))
            sys.stderr.write(line)
        sys.stderr.flush()

    thread = threading.Thread(target=pump, name="torchrun-stderr", daemon=True)
    thread.start()
    return thread, tail


def _watch(proc: subprocess.Popen[bytes], run_dir: Path, options: RunOptions) -> None:
    """Wait for torchrun; publish the debug rank's address; end a failed job quickly."""
    failed_at: float | None = None
    debug_file = (
        run_dir / rank_dir_name(options.debug_rank) / DEBUGPY_FILE
        if options.debug_rank is not None
        else None
    )
    while proc.poll() is None:
        address = read_json_object(debug_file) if debug_file is not None else None
        if address is not None:
            # The language server and 'quickdev attach --run' look in the job's own dir.
            write_json(run_dir / DEBUGPY_FILE, address)
            debug_file = None
        if failed_at is None and _any_rank_failed(run_dir, options.nproc):
            failed_at = time.monotonic()
        if failed_at is not None and time.monotonic() - failed_at > FAILURE_GRACE_S:
            _stop_group(proc)
            break
        time.sleep(POLL_S)
    proc.wait()


def _any_rank_failed(run_dir: Path, nproc: int) -> bool:
    for rank in range(nproc):
        path = run_dir / rank_dir_name(rank) / RESULT_FILE
        if path.exists():
            result = read_result(path.parent)
            if result is not None and result.status == "failed":
                return True
    return False


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait_s in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait_s)
            return
