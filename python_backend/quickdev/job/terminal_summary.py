"""The short human summary a terminal user reads on stderr."""

from __future__ import annotations

import os

from quickdev.rundir.changes import changes
from quickdev.rundir.result import JobResult, LoaderStats
from quickdev.rundir.verdict import headline as verdict_lines
from quickdev.rundir.verdict import made_by_problems


def _short(path: str) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return relative if not relative.startswith("..") else path


def _outputs(result: JobResult) -> list[str]:
    """Each file the job wrote outside its run directory (the first five)."""
    if result.keep_outputs:
        return []
    shown = [o for o in result.outputs if o.change in ("redirected", "changed", "deleted")]
    lines = []
    for output in shown[:5]:
        if output.written is None:
            lines.append(f"  deleted {_short(output.requested)}: put back")
        elif output.change == "redirected":
            # A framework's folder, moved before anything was written: Lightning's root is
            # often the working folder itself (".").
            asked = _short(output.requested)
            asked = "the working folder" if asked == "." else asked
            lines.append(f"  files for {asked} written to {_short(output.written)} instead")
        else:
            lines.append(
                f"  changed {_short(output.requested)}: put back; the job's version is kept"
            )
    return lines


def _loader_line(loader: LoaderStats) -> str:
    file, _, line = loader.origin.rpartition(":")
    passes = f"{loader.passes} pass" + ("" if loader.passes == 1 else "es")
    parts = [passes, f"{loader.batches} batches", f"data wait {loader.data_wait_s:.3f} s"]
    if loader.batch_signature:
        parts.append(loader.batch_signature)
    flags = "  NaN/Inf in batch!" if loader.nonfinite else ""
    return f"  loader {_short(file)}:{line}: {', '.join(parts)}{flags}"


def _memory_forecast(result: JobResult) -> list[str]:
    forecast = result.memory_forecast
    if forecast is None:
        return []
    if forecast.peak is None:
        return [f"  memory forecast: none ({forecast.error})"]
    lines = [f"  memory forecast: {forecast.headline()} (at {forecast.where()})"]
    lines.append(
        f"    {forecast.breakdown()}; batch size {forecast.batch_size}, {forecast.precision}"
    )
    if forecast.advice:
        lines.append(f"    {forecast.advice}")
    return lines


def _profile(result: JobResult) -> list[str]:
    """Where a profiled run's trace is and how to open it: the reason it was profiled."""
    profile = result.profile
    if profile is None or not profile.trace_files:
        return []  # no trace: a problem of the run says why (rundir/verdict.py)
    traces = profile.trace_files
    named = traces[0] if len(traces) == 1 else f"{len(traces)} traces, the first {traces[0]}"
    lines = [f"  profile: {named} in the run dir"]
    if profile.top_ops:
        top = profile.top_ops[0]
        lines[0] += f"; most self time: {top['name']} ({top['self_cpu_ms']:.3g} ms CPU)"
    runs_dir = _short(os.path.dirname(result.run_dir)) if result.run_dir else "RUNS_DIR"
    lines.append(
        f"    open it: quickdev tensorboard --logdir {runs_dir} (the PyTorch Profiler tab), "
        "or Open in TensorBoard on the run in VS Code"
    )
    return lines


def summarize(result: JobResult) -> str:
    lines = [f"quickdev: {result.status}  {_short(result.script)}  ({result.duration_s:.1f} s)"]
    # Why the job is not a clean pass, said first (rundir/verdict.py).
    lines += [f"  {line}" for line in verdict_lines(result, _short)]
    # A loader made and never iterated (a framework builds some it never uses) is noise.
    lines += [_loader_line(loader) for loader in result.loaders if loader.passes or loader.batches]
    if result.loop_batches:
        lines.append(f"  batches made by hand (no DataLoader): {result.loop_batches}")
    steps = f"  steps: {result.optimizer_steps}"
    if result.scaler_skipped_steps:
        steps += (
            f", {result.scaler_skipped_steps} skipped by the GradScaler (inf/NaN gradients "
            "while it finds its scale, as a float16 run's first steps can be)"
        )
    if result.losses:
        first, last = result.losses[0], result.losses[-1]
        steps += f", losses: {len(result.losses)} ({first:.4g} → {last:.4g})"
    lines.append(steps)
    if result.phases is not None and (
        result.phases.evaluation_forwards or result.phases.test_forwards
    ):
        phases = result.phases
        lines.append(
            f"  evaluation forwards: {phases.evaluation_forwards} during training, "
            f"{phases.test_forwards} after it"
        )
    if result.children:
        shown = ", ".join(
            f"{c.name} {c.status} ({c.optimizer_steps} steps)" for c in result.children[:8]
        )
        more = f" and {len(result.children) - 8} more" if len(result.children) > 8 else ""
        lines.append(f"  processes the script started: {shown}{more}")
    lines.extend(_outputs(result))
    lines.extend(_memory_forecast(result))
    lines.extend(_profile(result))
    lines += [f"  {line}" for line in changes(result)]
    if result.error is not None and not made_by_problems(result):
        lines.append(f"  error: {result.error.headline(one_line=True)}")
    if result.exit_code not in (None, 0):
        lines.append(f"  the script called sys.exit({result.exit_code})")
    lines.append(f"  run dir: {_short(result.run_dir)}")
    return "\n".join(lines)
