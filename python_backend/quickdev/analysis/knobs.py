"""Options and module-level constants that shorten a run (for advice), and the one
argument an explicit batch size setting passes."""

from __future__ import annotations

import ast

from quickdev.analysis.findings import Knob, KnobKind

# Option names (dashes as underscores, lower case) by what they control.
KNOB_NAMES: dict[str, KnobKind] = {
    **dict.fromkeys(
        ["epochs", "epoch", "max_epochs", "num_epochs", "n_epochs", "nepochs", "train_epochs"],
        "epochs",
    ),
    **dict.fromkeys(
        [
            "steps",
            "max_steps",
            "num_steps",
            "n_steps",
            "train_steps",
            "total_steps",
            "iters",
            "max_iters",
            "num_iters",
            "iterations",
            "max_iterations",
        ],
        "steps",
    ),
    **dict.fromkeys(
        [
            "eval_iters",
            "eval_steps",
            "eval_batches",
            "num_eval_batches",
            "val_batches",
            "val_steps",
            "eval_iterations",
            "max_eval_steps",
        ],
        "eval_iters",
    ),
    **dict.fromkeys(["num_workers", "workers", "n_workers", "dataloader_workers"], "workers"),
    **dict.fromkeys(
        ["batch_size", "bs", "train_batch_size", "per_device_train_batch_size"], "batch_size"
    ),
    **dict.fromkeys(["dry_run", "smoke_test", "quick_test"], "dry_run"),
}


def knob_from_assign(stmt: ast.stmt) -> Knob | None:
    """``eval_iters = 200``, ``batch_size = 12`` at module level (nanoGPT-style configuration
    by globals)."""
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, int)
        and not isinstance(stmt.value.value, bool)
    ):
        return None
    name = stmt.targets[0].id
    kind = KNOB_NAMES.get(name.lower())
    if kind not in ("epochs", "steps", "eval_iters", "batch_size"):
        return None
    return Knob(kind, name, stmt.lineno, False, stmt.value.value, is_global=True)


def knob_from_call(call: ast.Call) -> Knob | None:
    """``parser.add_argument("--epochs", type=int, default=10)`` → an ``epochs`` knob."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != "add_argument":
        return None
    flags = [
        a.value
        for a in call.args
        if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-")
    ]
    long_flags = [f for f in flags if f.startswith("--")] or flags
    for flag in long_flags:
        kind = KNOB_NAMES.get(flag.lstrip("-").replace("-", "_").lower())
        if kind is None:
            continue
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        action = keywords.get("action")
        is_switch = isinstance(action, ast.Constant) and action.value == "store_true"
        default = keywords.get("default")
        default_int = (
            default.value
            if isinstance(default, ast.Constant)
            and isinstance(default.value, int)
            and not isinstance(default.value, bool)
            else None
        )
        return Knob(kind, flag, call.lineno, is_switch, default_int)
    return None


def suggested_args(knobs: tuple[Knob, ...], batch_size: int) -> list[str]:
    """The arguments an explicit batch size setting passes: the script's own
    ``--batch-size``-like option with that value. Nothing else is changed by default:
    one epoch and the budgets are kept by the job itself, for the terminal and the
    editor alike."""
    for knob in knobs:
        if knob.kind == "batch_size" and not knob.is_global and not knob.is_switch:
            return [knob.flag, str(batch_size)]
    return []
