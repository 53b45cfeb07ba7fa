"""What a quick-dev run did that a plain ``python train.py`` would not have, worded once.

The terminal summary, the notification at a run's end and the result view show these
same lines, so the editor and the terminal tell the user the same thing.
"""

from __future__ import annotations

import os

from quickdev.rundir import option_table
from quickdev.rundir.layout import ORIGINALS_DIR
from quickdev.rundir.option_table import MAX_STEPS
from quickdev.rundir.result import NAN_HUNT, DeviceRemaps, EndedLoop, JobResult
from quickdev.rundir.verdict import NONFINITE_LOSS, QUICKDEV_ERROR


def changes(result: JobResult) -> list[str]:
    """One line per change: options set to one epoch, a framework's settings replaced,
    tensors placed on another device, batches computed smaller (or kept, and why), files
    kept in the run directory, the person's own edits kept and changes that could not be
    put back, each loop a budget ended early, and the budget that stopped the run (with
    advice). First, a torch or Python quickdev is not tested with (quickdev/torch_compat.py):
    what follows may be quickdev's failure."""
    lines = [result.untested_environment] if result.untested_environment else []
    if result.limits.one_epoch_options:
        options = ", ".join(result.limits.one_epoch_options)
        lines.append(f"one epoch: {options} set to 1 (pass it explicitly to keep your value)")
    if result.limits.settings_changed:
        lines.append(f"settings: {'; '.join(result.limits.settings_changed)}")
    if result.device is not None and result.device.remaps:
        counts = ", ".join(f"{idiom} {n}" for idiom, n in result.device.remaps.items())
        lines.append(f"device: {result.device.actual} instead of what the script asked ({counts})")
    if result.device is not None:
        lines += _cuda_lines(result.device, result.cwd)
    for choice in result.device.autocast if result.device is not None else []:
        off = " (autocast off)" if choice.get("ran") == "float32" else ""
        lines.append(
            f"autocast: {choice.get('asked')} regions ran in {choice.get('ran')}{off}: "
            f"{choice.get('why')}"
        )
    lines += [cost.line for cost in result.step_cost]
    if result.keep_outputs:
        lines.append("outputs: kept where the script wrote them (--keep-outputs)")
    elif result.outputs:
        lines.append(
            f"outputs: {len(result.outputs)} file(s) kept in the run dir, your files as they were"
        )
    lines += _file_safety(result)
    lines += [ended_loop_line(loop, result.cwd) for loop in result.loops_ended]
    if result.limits.find_nonfinite:
        lines.append(_hunt_text(result))
    if result.stop_reason and result.status == "stopped":
        lines.append(f"stopped: {_stop_text(result)}")
    if result.stop_advice and (result.status == "stopped" or result.loops_ended):
        lines.append(f"advice: {result.stop_advice}")
    return lines


_ROLE = {
    "training": "training loop",
    "evaluation": "evaluation loop",
    "sampling": "sampling loop",
    "epoch": "epoch loop",
}
_ONE = {"steps": "step", "forwards": "forward", "passes": "pass"}
# What a loop cut short leaves behind, said where the user reads the loop's line.
_CUT_SHORT = {
    # nanoGPT's estimate_loss() fills a tensor sized for all its forwards and takes its
    # mean, word_language_model's evaluate() divides its sum by the data's full length:
    # cut short, such a figure reads low (a perplexity of 1.3 after two steps), and a
    # "best so far" check on it may go either way.
    "evaluation": "a figure it computes over all its forwards (a mean, an accuracy) "
    "covers these {count} only, and reads low where the script divides by the full count",
    "sampling": "what it generates is cut short, not what a full run makes",
}


def ended_loop_line(loop: EndedLoop, cwd: str = "") -> str:
    """``train.py:42 training loop ended after 2 steps (loop_steps)``; the file relative to
    the job's working directory when it is under it (a library's, to its package). An
    evaluation or sampling loop's line says what being cut short does to what it makes."""
    unit = _ONE.get(loop.unit, loop.unit) if loop.count == 1 else loop.unit
    what = _ROLE.get(loop.role) or _around(loop)
    if loop.library:
        what += " (in a library the script calls)"
    times = f", {loop.times} times" if loop.times > 1 else ""
    file = _library_path(loop.file) if loop.library else _shown(loop.file, cwd)
    line = f"{file}:{loop.line} {what} ended after {loop.count} {unit}{times} ({loop.budget})"
    if loop.role in _CUT_SHORT:
        line += ": " + _CUT_SHORT[loop.role].format(count=loop.count)
    return line


def _library_path(file: str) -> str:
    """A library's file from its package on: ``denoising_diffusion_pytorch/model.py``."""
    parts = file.replace(os.sep, "/").split("/")
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return "/".join(parts[len(parts) - parts[::-1].index(marker) :])
    return file


def _shown(file: str, cwd: str) -> str:
    """``file`` relative to the job's working directory when it is under it."""
    if cwd and os.path.isabs(file) and file.startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(file, cwd)
    return file


def _around(loop: EndedLoop) -> str:
    """An enclosing loop, named by the loop ended inside it: ``loop around line 60`` in
    the same file, ``loop around trainer.py:60`` in another."""
    if not loop.around:
        return "outer loop"
    file, _, line = loop.around.rpartition(":")
    inner = f"line {line}" if file == loop.file else f"{os.path.basename(file)}:{line}"
    return f"loop around {inner}"


def _cuda_lines(device: DeviceRemaps, cwd: str) -> list[str]:
    """What the script asked of CUDA and was told: ``cuda: torch.cuda.is_available() (asked
    once) answered as on a machine with one CUDA device, stood in on the cpu``; and each
    check for more devices that was answered yes."""
    lines = []
    if device.answered:
        asked = ", ".join(f"{query}() ({_times(n)})" for query, n in device.answered.items())
        count = device.cuda_devices
        machine = "one CUDA device" if count == 1 else f"{count} CUDA devices, one per rank"
        lines.append(
            f"cuda: {asked} answered as on a machine with {machine}, "
            f"stood in on the {device.actual}"
        )
    for where, needed in device.needed.items():
        file, _, line = where.rpartition(":")
        lines.append(
            f"cuda: the script's check for {needed} CUDA devices at {_shown(file, cwd)}:{line} "
            f"answered yes; each device index stands in on the {device.actual}"
        )
    for where, needed in device.declined.items():
        file, _, line = where.rpartition(":")
        lines.append(
            f"cuda: the script's check for {needed} CUDA devices at {_shown(file, cwd)}:{line} "
            "answered no: the stand-in gives at most 8"
        )
    return lines


def _times(n: int) -> str:
    return "asked once" if n == 1 else f"asked {n} times"


def _hunt_text(result: JobResult) -> str:
    """The NaN hunt's own budget, and what it found (the origin itself is the run's error;
    the hunt's own failure and a NaN loss it did not trace are problems, said first)."""
    steps = result.limits.values.get(MAX_STEPS)
    budget = f"up to {steps} steps" if steps else "no step limit"
    text = f"NaN hunt: trained {budget}, past --batches and one epoch"
    origin = result.first_nonfinite
    if origin is not None:
        return f"{text}; the first NaN/Inf reached {origin.reached} at step {origin.reached_step}"
    kinds = {(p.kind, p.feature) for p in result.problems}
    if (NONFINITE_LOSS, None) in kinds:
        return f"{text}; it did not trace the NaN/Inf loss said above to an operation"
    taken = result.optimizer_steps
    checked = f"no NaN/Inf reached the loss, a gradient or a parameter in {taken} steps"
    if (QUICKDEV_ERROR, NAN_HUNT) in kinds:
        return f"{text}; it could not follow every call (said above), and {checked}"
    return f"{text}; {checked}"


def _stop_text(result: JobResult) -> str:
    """The budget that ended the run, with its value and the option that changes it."""
    reason = result.stop_reason or ""
    limit = option_table.BY_NAME.get(reason)
    if limit is None or not limit.stops:
        return reason
    value = result.limits.values.get(reason)
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{reason} ({shown} {limit.counts}; {limit.flag} changes it)"


def _file_safety(result: JobResult) -> list[str]:
    """The person's edits kept, and changes no journal saw: one line each."""
    safety = result.file_safety
    if safety is None:
        return []
    lines = []
    if safety.your_edits:
        names = _names(result, [e.path for e in safety.your_edits])
        kept = [e.original for e in safety.your_edits if e.original]
        originals = os.path.join(result.run_dir, ORIGINALS_DIR) if result.run_dir else "the run"
        where = f"; the versions from before the job are in {originals}"
        lines.append(
            f"your edits: {names} kept as you saved them while the job ran{where if kept else ''}"
        )
    if safety.not_restored:
        names = _names(result, [u.path for u in safety.not_restored])
        lines.append(
            f"not put back: {names} changed by something the journal does not follow "
            "(not Python, an unknown library, or you); no copy was kept"
        )
    if safety.not_checked:
        lines.append(f"not checked for other programs' changes: {_not_checked(result)}")
    elif not safety.complete:  # a result of an earlier version, which named no folder
        lines.append(f"not checked: files past the first {safety.check_bound} in the folder")
    return lines


def _not_checked(result: JobResult) -> str:
    """The folders the start manifest left out, by reason: ``.venv (a Python environment);
    .mypy_cache, dist and 3 more (ignored by git)``."""
    assert result.file_safety is not None
    safety = result.file_safety
    by_why: dict[str, list[str]] = {}
    for path, why in safety.not_checked.items():
        by_why.setdefault(why, []).append(path)
    text = "; ".join(f"{_names(result, paths)} ({why})" for why, paths in by_why.items())
    more = safety.not_checked_total - len(safety.not_checked)
    return text + (f"; and {more} more folders" if more > 0 else "")


def _names(result: JobResult, paths: list[str], shown: int = 3) -> str:
    names = [os.path.relpath(p, result.cwd) if result.cwd else p for p in paths]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
