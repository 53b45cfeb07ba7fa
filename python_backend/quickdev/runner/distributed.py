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
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from quickdev.runner.options import ProfileOptions, RunOptions
from quickdev.runner.result import (
    RESULT_FILE,
    ErrorInfo,
    JobResult,
    ProfileSummary,
    Redirection,
    read_result,
)
from quickdev.runner.run_dir import create_run_dir, new_run_id
from quickdev.runner.run_files import DEBUGPY_FILE

OPTIONS_ENV = "QUICKDEV_RANK_OPTIONS"  # the job's options as JSON, for every rank
RUN_DIR_ENV = "QUICKDEV_PARENT_RUN_DIR"
TRACE_GLOB = "*.pt.trace.json*"
FAILURE_GRACE_S = 5.0  # after a rank fails: time for the others to end on their own
POLL_S = 0.1


def rank_dir_name(rank: int) -> str:
    return f"rank{rank}"


# --- the parent: quickdev run --nproc N ------------------------------------------------


def run_distributed(options: RunOptions) -> int:
    """Run the job under torchrun with ``options.nproc`` local ranks; returns the exit code."""
    started = time.time()
    stem = options.name or Path(options.script or options.module or "job").stem
    run_id = options.run_id or new_run_id(stem)
    run_dir = create_run_dir(options.runs_dir, run_id)
    # Readers poll result.json from the start, as for any job.
    initial = initial_result(run_dir, options, started)
    initial.write(run_dir)
    from quickdev.runner.job import EXIT_USAGE, target_from_options
    from quickdev.runner.target import UsageProblem

    try:
        # A missing script is one line from here, not N ranks failing under torchrun.
        target_from_options(options).check()
    except UsageProblem as exc:
        initial.status = "failed"
        initial.error = ErrorInfo(type="UsageError", message=str(exc))
        initial.write(run_dir)
        print(str(exc), file=sys.stderr)
        return EXIT_USAGE
    launch = [
        sys.executable, "-m", "torch.distributed.run",
        "--standalone", "--nnodes", "1", "--nproc-per-node", str(options.nproc),
        "--monitor-interval", str(POLL_S),
        "-m", "quickdev.runner.distributed",
    ]  # fmt: skip
    env = {
        **os.environ,
        OPTIONS_ENV: options_to_json(options),
        RUN_DIR_ENV: str(run_dir),
        # torchrun warns about thread counts on every start; one thread per rank on a
        # laptop CPU is what quick-dev wants anyway.
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
    }
    # A new session, so a failure can stop torchrun and every rank with one signal.
    proc = subprocess.Popen(launch, env=env, stderr=subprocess.PIPE, start_new_session=True)
    pump, stderr_tail = _tee_stderr(proc)
    # torchrun runs in its own session, so a signal to this process (a timeout, the
    # language server cancelling) must be passed on, or the ranks outlive the job.
    previous = {
        sig: signal.signal(sig, _raise_interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)
    }
    try:
        _watch(proc, run_dir, options)
    except KeyboardInterrupt:
        _stop_group(proc)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    pump.join(timeout=5)
    merged = merge_results(
        run_dir, options, started=started, launcher_code=proc.returncode, stderr=stderr_tail
    )
    text = json.dumps(merged, indent=2, default=str)
    tmp = run_dir / f".{RESULT_FILE}.tmp"
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, run_dir / RESULT_FILE)
    if options.print_json:
        print(json.dumps(merged, default=str), flush=True)
    else:
        print(_summary(merged), file=sys.stderr, flush=True)
    return 0 if merged["status"] in ("passed", "stopped") else 1


def _summary(merged: dict[str, Any]) -> str:
    """The runner's summary of the merged result, and a line per rank."""
    from quickdev.runner.summary import summarize

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
        if debug_file is not None and debug_file.exists():
            # The language server and 'quickdev attach --run' look in the job's own dir.
            tmp = run_dir / f".{DEBUGPY_FILE}.tmp"
            shutil.copyfile(debug_file, tmp)
            os.replace(tmp, run_dir / DEBUGPY_FILE)
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
            with contextlib.suppress(OSError, ValueError):
                if read_result(path.parent).status == "failed":
                    return True
    return False


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait_s in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait_s)
            return


# --- merging --------------------------------------------------------------------------


def merge_results(
    run_dir: Path,
    options: RunOptions,
    started: float,
    launcher_code: int | None,
    stderr: collections.deque[str] | None = None,
) -> dict[str, Any]:
    """One result for the whole job, from the ranks' own results (``ranks`` says which)."""
    ranks: list[tuple[int, JobResult | None, float]] = []
    for rank in range(options.nproc):
        rank_dir = run_dir / rank_dir_name(rank)
        try:
            ranks.append((rank, read_result(rank_dir), (rank_dir / RESULT_FILE).stat().st_mtime))
        except (OSError, ValueError):
            ranks.append((rank, None, float("inf")))
    traces = _gather_traces(run_dir, [r for r, res, _ in ranks if res is not None])

    present = [(rank, res, mtime) for rank, res, mtime in ranks if res is not None]
    base = present[0][1] if present else initial_result(run_dir, options, started)
    merged = dataclasses.replace(base, id=run_dir.name, run_dir=str(run_dir))
    merged.started = _iso(started)
    merged.duration_s = round(time.time() - started, 3)
    merged.peak_rss_mb = max((res.peak_rss_mb for _, res, _ in present), default=0.0)
    merged.redirected_outputs = [
        Redirection(**dataclasses.asdict(r))
        for _, res, _ in present
        for r in res.redirected_outputs
    ]
    if traces:
        profile = merged.profile or ProfileSummary()
        merged.profile = dataclasses.replace(profile, trace_files=traces)

    # The rank that ended first explains the job: its peers then fail at their next
    # collective ("connection closed by peer"), which is a consequence, not the cause.
    ended_early = sorted(
        ((mtime, rank, res) for rank, res, mtime in present if res.status in ("failed", "stopped")),
        key=lambda item: (item[0], item[1]),
    )
    missing = [rank for rank, res, _ in ranks if res is None or res.status in ("running", "killed")]
    merged.error, merged.exit_code, merged.stop_reason = None, None, None
    if ended_early and ended_early[0][2].status == "failed":
        _, rank, first = ended_early[0]
        merged.status = "failed"
        merged.error = _rank_error(rank, first.error)
        merged.exit_code = first.exit_code
        merged.stop_reason = first.stop_reason
    elif missing or (launcher_code not in (0, None) and not ended_early):
        merged.status = "failed" if launcher_code not in (0, None, -9, -15) else "killed"
        tail = [line for line in (stderr or []) if line.strip()]
        merged.error = ErrorInfo(
            type="DistributedLaunchError",
            message=(
                f"torch.distributed.run exited with {launcher_code}; ranks without a result: "
                f"{missing or 'none'}" + (f"; last output: {tail[-1].strip()}" if tail else "")
            ),
        )
    elif ended_early:
        merged.status = "stopped"
        merged.stop_reason = ended_early[0][2].stop_reason
    else:
        merged.status = "passed"
        merged.stop_reason = "completed"

    data = merged.to_dict()
    # Beside the schema's fields, a line per rank: readers that know only the schema
    # ignore it, and a person sees at once which rank did what.
    data["ranks"] = [
        {
            "rank": rank,
            "status": res.status if res is not None else "killed",
            "run_dir": rank_dir_name(rank),
            "optimizer_steps": res.optimizer_steps if res is not None else 0,
            "batches": sum(loader.batches for loader in res.loaders) if res is not None else 0,
        }
        for rank, res, _ in ranks
    ]
    return data


def initial_result(run_dir: Path, options: RunOptions, started: float) -> JobResult:
    script = options.script or f"-m {options.module}"
    return JobResult(
        id=run_dir.name,
        status="running",
        script=script,
        argv=[script, *options.args],
        cwd=os.getcwd(),
        started=_iso(started),
        run_dir=str(run_dir),
    )


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat(timespec="seconds")


def _rank_error(rank: int, error: ErrorInfo | None) -> ErrorInfo:
    if error is None:
        return ErrorInfo(type="RankFailed", message=f"rank {rank} failed")
    return dataclasses.replace(error, message=f"rank {rank}: {error.message}")


def _gather_traces(run_dir: Path, ranks: list[int]) -> list[str]:
    """Move the ranks' traces into the job's directory: one plugin run, one worker a rank."""
    moved: list[str] = []
    for rank in ranks:
        rank_dir = run_dir / rank_dir_name(rank)
        names = []
        for trace in sorted(rank_dir.glob(TRACE_GLOB)):
            os.replace(trace, run_dir / trace.name)
            names.append(trace.name)
        if names:
            result = read_result(rank_dir)
            if result.profile is not None:
                result.profile.trace_files = [f"../{name}" for name in names]
                result.write(rank_dir)
        moved.extend(names)
    moved.extend(
        p.name for p in sorted(run_dir.glob(TRACE_GLOB)) if p.name not in moved
    )  # traces from an earlier merge of the same run
    return moved


# --- options travel to the ranks as JSON ----------------------------------------------


def options_to_json(options: RunOptions) -> str:
    data = dataclasses.asdict(options)
    data["runs_dir"] = str(options.runs_dir)
    return json.dumps(data)


def options_from_json(text: str) -> RunOptions:
    data = json.loads(text)
    data["runs_dir"] = Path(data["runs_dir"])
    if data.get("profile") is not None:
        data["profile"] = ProfileOptions(**data["profile"])
    if data.get("listen") is not None:
        data["listen"] = (str(data["listen"][0]), int(data["listen"][1]))
    return RunOptions(**data)


# --- one rank: python -m quickdev.runner.distributed (started by torchrun) -------------


def rank_options(options: RunOptions, rank: int, parent_run_dir: Path) -> RunOptions:
    """The options of one rank's own quick-dev job."""
    debugged = options.debug_rank == rank
    return dataclasses.replace(
        options,
        runs_dir=parent_run_dir,
        run_id=rank_dir_name(rank),
        name=None,
        nproc=1,
        debug_rank=None,
        print_json=False,
        listen=(options.listen or ("127.0.0.1", 0)) if debugged else None,
        # The debugged rank waits for the editor; its peers wait at their first collective.
        wait_for_client=debugged,
    )


def rank_main() -> int:
    rank = int(os.environ["RANK"])
    options = rank_options(
        options_from_json(os.environ[OPTIONS_ENV]), rank, Path(os.environ[RUN_DIR_ENV])
    )
    from quickdev.runner.job import run_job, target_from_options

    # The job itself, without run_from_cli's summary: the parent prints one for all ranks.
    outcome = run_job(options, target_from_options(options), in_process=False)
    if outcome.usage_message:
        print(outcome.usage_message, file=sys.stderr)
    return outcome.exit_code


if __name__ == "__main__":
    sys.exit(rank_main())
