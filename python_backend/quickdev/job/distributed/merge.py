"""One result for a distributed job, merged from its ranks' own results."""

from __future__ import annotations

import collections
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from quickdev.job.failure import labelled_error
from quickdev.options import RunOptions
from quickdev.rundir.ids import iso_utc
from quickdev.rundir.layout import RESULT_FILE, TRACE_GLOB, rank_dir_name
from quickdev.rundir.result import (
    ErrorInfo,
    FileSafety,
    JobResult,
    Output,
    ProfileSummary,
    read_result,
)
from quickdev.rundir.verdict import add_problem, decide


def merge_file_safety(found: list[FileSafety | None]) -> FileSafety | None:
    """Every rank's kept edits and unrestored changes, once each."""
    present = [f for f in found if f is not None]
    if not present:
        return None
    merged = dataclasses.replace(present[0], your_edits=[], not_restored=[])
    for safety in present:
        merged.your_edits += [e for e in safety.your_edits if e not in merged.your_edits]
        merged.not_restored += [c for c in safety.not_restored if c not in merged.not_restored]
        merged.complete = merged.complete and safety.complete
    return merged


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
        result = read_result(rank_dir)
        try:
            mtime = (rank_dir / RESULT_FILE).stat().st_mtime
        except OSError:
            result, mtime = None, float("inf")
        ranks.append((rank, result, mtime) if result is not None else (rank, None, float("inf")))
    traces = _gather_traces(run_dir, [r for r, res, _ in ranks if res is not None])

    present = [(rank, res, mtime) for rank, res, mtime in ranks if res is not None]
    base = present[0][1] if present else initial_result(run_dir, options, started)
    merged = dataclasses.replace(base, id=run_dir.name, run_dir=str(run_dir))
    merged.started = iso_utc(started)
    merged.duration_s = round(time.time() - started, 3)
    merged.peak_rss_mb = max((res.peak_rss_mb for _, res, _ in present), default=0.0)
    merged.outputs = [Output(**dataclasses.asdict(r)) for _, res, _ in present for r in res.outputs]
    merged.file_safety = merge_file_safety([res.file_safety for _, res, _ in present])
    merged.problems = []
    for _, res, _ in present:
        for problem in res.problems:
            add_problem(merged.problems, problem)
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
    erred = any(res.status == "error" for _, res, _ in present)  # Quickdev's own error
    merged.error, merged.exit_code, merged.stop_reason = None, None, None
    if ended_early and ended_early[0][2].status == "failed":
        _, rank, first = ended_early[0]
        merged.status = "failed"
        merged.error = labelled_error(f"rank {rank}", first.error)
        merged.exit_code = first.exit_code
        merged.stop_reason = first.stop_reason
        merged.first_nonfinite = first.first_nonfinite  # the NaN hunt's finding, if it was that
    elif missing or (launcher_code not in (0, None) and not ended_early and not erred):
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
    decide(merged)

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
        started=iso_utc(started),
        run_dir=str(run_dir),
    )


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
            if result is not None and result.profile is not None:
                result.profile.trace_files = [f"../{name}" for name in names]
                result.write(rank_dir)
        moved.extend(names)
    moved.extend(
        p.name for p in sorted(run_dir.glob(TRACE_GLOB)) if p.name not in moved
    )  # traces from an earlier merge of the same run
    return moved
