"""The short human summary a terminal user reads on stderr."""

from __future__ import annotations

import os

from quickdev.rundir.result import JobResult


def _short(path: str) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return relative if not relative.startswith("..") else path


def _outputs(result: JobResult) -> list[str]:
    if result.keep_outputs:
        return ["  outputs: kept where the script wrote them (--keep-outputs)"]
    shown = [o for o in result.outputs if o.change in ("redirected", "changed", "deleted")]
    lines = []
    for output in shown[:5]:
        if output.written is None:
            lines.append(f"  deleted {_short(output.requested)}: put back")
        elif output.change == "redirected":
            lines.append(f"  saved {_short(output.requested)} → {_short(output.written)} instead")
        else:
            lines.append(
                f"  changed {_short(output.requested)}: put back; the job's version is kept"
            )
    if result.outputs:
        lines.append(
            f"  outputs: {len(result.outputs)} file(s) kept in the run dir, your files as they were"
        )
    return lines


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
    if result.loop_batches:
        lines.append(f"  batches made by hand (no DataLoader): {result.loop_batches}")
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
    lines.extend(_outputs(result))
    if result.stop_reason and result.status == "stopped":
        lines.append(f"  stopped: {_budget_text(result)}")
        if result.stop_advice:
            lines.append(f"  advice: {result.stop_advice}")
    if result.error is not None:
        lines.append(f"  error: {result.error.headline(one_line=True)}")
    if result.exit_code not in (None, 0):
        lines.append(f"  the script called sys.exit({result.exit_code})")
    lines.append(f"  run dir: {_short(result.run_dir)}")
    return "\n".join(lines)


def _budget_text(result: JobResult) -> str:
    """The budget that ended the run, with its value and the option that changes it."""
    limits = result.limits
    described = {
        "train_passes": (
            limits.train_passes,
            "pass(es) over the training loader",
            "--train-passes",
        ),
        "loop_steps": (limits.loop_steps, "steps without a DataLoader", "--loop-steps"),
        "eval_forwards": (
            limits.eval_forwards,
            "evaluation forwards in a row without a DataLoader",
            "--eval-forwards",
        ),
        "timeout": (limits.timeout_s, "seconds", "--timeout"),
        "max_steps": (limits.max_steps, "steps", "--max-steps"),
    }
    reason = result.stop_reason or ""
    if reason not in described:
        return reason
    value, what, option = described[reason]
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{reason} ({shown} {what}; {option} changes it)"
