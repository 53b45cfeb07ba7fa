"""The short human summary a terminal user reads on stderr."""

from __future__ import annotations

import os

from quickdev.job.failure import one_line
from quickdev.rundir.result import JobResult


def _short(path: str) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return relative if not relative.startswith("..") else path


def summarize(result: JobResult) -> str:
    lines = [f"quickdev: {result.status}  {_short(result.script)}  ({result.duration_s:.1f} s)"]
    if result.limits.one_epoch_options:
        options = ", ".join(result.limits.one_epoch_options)
        lines.append(f"  one epoch: {options} set to 1 (pass it explicitly to keep your value)")
    for loader in result.loaders:
        file, _, line = loader.origin.rpartition(":")
        flags = "  NaN/Inf in batch!" if loader.nonfinite else ""
        lines.append(
            f"  loader {_short(file)}:{line}: {loader.passes} pass(es), {loader.batches} batches, "
            f"data wait {loader.data_wait_s:.3f} s, {loader.batch_signature}{flags}"
        )
    if result.device is not None and result.device.remaps:
        counts = ", ".join(f"{idiom} {n}" for idiom, n in result.device.remaps.items())
        lines.append(
            f"  device: {result.device.actual} instead of what the script asked ({counts})"
        )
    steps = f"  steps: {result.optimizer_steps}"
    if result.losses:
        first, last = result.losses[0], result.losses[-1]
        steps += f", losses: {len(result.losses)} ({first:.4g} → {last:.4g})"
    lines.append(steps)
    for redirection in result.redirected_outputs:
        lines.append(
            f"  saved {_short(redirection.requested)} → {_short(redirection.written)} instead"
        )
    if result.stop_reason and result.status == "stopped":
        lines.append(f"  stopped: {result.stop_reason}")
    if result.error is not None:
        lines.append(f"  error: {one_line(result.error)}")
    if result.exit_code not in (None, 0):
        lines.append(f"  the script called sys.exit({result.exit_code})")
    lines.append(f"  run dir: {_short(result.run_dir)}")
    return "\n".join(lines)
