"""An origin as result.json, the terminal and the editor report it: one line that says what
happened, where, when, and what it reached."""

from __future__ import annotations

import os

import torch

from quickdev.limits.nonfinite.provenance import Origin
from quickdev.limits.nonfinite.values import describe, kinds
from quickdev.rundir.nonfinite_origin import NonfiniteOrigin


def report(origin: Origin, reached: str, reached_step: int) -> NonfiniteOrigin:
    origin.settle()
    return NonfiniteOrigin(
        message=message(origin, reached, reached_step),
        op=origin.op,
        cause=origin.cause,
        phase=origin.phase,
        step=origin.step,
        reached=reached,
        reached_step=reached_step,
        file=origin.file,
        line=origin.line,
        function=origin.function,
        module=origin.module,
        inputs=list(origin.inputs),
        output=origin.output,
        sample=origin.sample,
        forward=dict(origin.forward),
    )


def message(origin: Origin, reached: str, reached_step: int) -> str:
    """``-inf from torch.log in criterion, step 3 (forward), reached the loss at step 3;
    input float32[8] min 0 max 0.9 mean 0.4, 2 zeros``."""
    values = kinds(origin.output) if origin.output is not None else "NaN/Inf"
    what = _what(origin, values)
    where = f" in {origin.module}" if origin.module else ""
    when = "before training" if origin.step == 0 else f"step {origin.step}"
    text = f"{what}{where}, {when} ({origin.phase})"
    if origin.gpu:
        text += f": {origin.gpu}"
    if origin.masked:
        text += f": {origin.masked}"
        if origin.designed is not None:
            designed_op, _, designed_line = origin.designed
            at = f" at line {designed_line}" if designed_line is not None else ""
            text += f"; the {origin.designed_kinds} is from {designed_op}{at}"
    text += f"; it reached {reached}"
    if reached_step != origin.step:
        text += f" at step {reached_step}"
    if origin.sample is not None:
        sample = origin.sample
        index = (
            f"dataset index {sample.dataset_index}, " if sample.dataset_index is not None else ""
        )
        loader = os.path.basename(sample.loader)
        text += f"; in the batch from the loader at {loader} ({index}row {sample.row})"
    if origin.forward:
        shown = "; ".join(f"{name} {describe(t)}" for name, t in origin.forward.items())
        text += f"; its forward kept {shown}"
    if origin.inputs:
        shown = "; ".join(describe(t) for t in origin.inputs[:2])
        kind = "incoming gradient" if origin.phase == "backward" else "input"
        text += f"; {kind}{'s' if len(origin.inputs) > 1 else ''} {shown}"
    return text


def _what(origin: Origin, values: str) -> str:
    op = origin.op
    if origin.phase == "backward":
        function = f" ({origin.detail})" if origin.detail else ""
        if origin.cause == "produced":
            return (
                f"{values} from the backward of {op}{function}, from finite gradients"
                f"{_zero_in_forward(origin)}"
            )
        return f"{values} in the gradients reaching the backward of {op}{function}"
    given = f" ({origin.detail})" if origin.detail else ""
    if origin.masked or origin.gpu:
        return f"{values} from {op}{given}"
    if origin.cause == "produced" and origin.designed is not None:
        designed_op, _, designed_line = origin.designed
        at = f" at line {designed_line}" if designed_line is not None else ""
        return (
            f"{values} from {op}{given}, from an input holding {origin.designed_kinds} by "
            f"design ({designed_op}{at}, made finite again on earlier calls)"
        )
    if origin.cause == "produced":
        return f"{values} from {op}{given}, from finite inputs"
    if origin.cause == "argument":
        return f"{values} given to {op} ({origin.detail})"
    return f"{values} in the input of {op}, held before any operation the hunt saw"


def _zero_in_forward(origin: Origin) -> str:
    """``, where its forward result was 0 (1 of 16 values)``: a derivative is infinite
    (sqrt, a power below 1) or 0/0 (a norm's) where a forward value is 0."""
    for name, t in origin.forward.items():
        if t.zeros:
            count = 1
            for size in t.shape:
                count *= size
            return f", where its forward {name} was 0 ({t.zeros} of {count} values)"
    return ""


def batch_row(t: torch.Tensor) -> int:
    """The first sample (row of the batch) holding a non-finite value."""
    if t.dim() == 0:
        return 0
    with torch.no_grad():
        bad = ~torch.isfinite(t.detach().reshape(t.shape[0], -1)).all(dim=1)
        rows = bad.nonzero()
    return int(rows[0, 0]) if rows.numel() else 0
