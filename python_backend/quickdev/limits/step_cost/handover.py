"""The memory forecast's record of the full-size step, handed from a step-cost probe to the
job: the probe ran the script's own full-size step on fake tensors, which the forecast's
capture (``limits/forecast_capture.py``) recorded there; the job computes a smaller step,
and its forecast replays the full-size one, so that its figures are of the script's own
batch size, as without the smaller batch."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from quickdev.forecast.step import Event

if TYPE_CHECKING:
    from quickdev.limits.forecast_capture import StepCapture


@dataclass
class StepRecord:
    """What of a capture another process can take over: the step's calls and reads."""

    events: list[Event]
    reads: list[tuple[str, Any]]
    autocast_dtype: torch.dtype | None
    note: str | None  # why the loss could not be replayed


def record_of_step(capture: StepCapture) -> bytes | None:
    """In the probe: what ``capture`` recorded of the step, pickled (a string: why it
    cannot be handed over); None when it recorded no training step."""
    if capture.state == "recording" and capture._backward_seen():
        capture._captured(None)
    if capture.state != "captured":
        return None
    record = StepRecord(capture.events, capture.reads, capture.autocast_dtype, capture.loss_note)
    try:
        return pickle.dumps(record)
    except Exception as exc:  # the script's own objects among the step's arguments
        return pickle.dumps(f"the full-size step's record could not be handed over ({exc})")


def adopt(capture: StepCapture, data: bytes | None) -> None:
    """In the job: the forecast replays the probe's full-size step, with this process's
    model, optimizer and gradient accumulation. The first training loader made smaller is
    the one whose step it replays; once this process has captured its own, it is too late."""
    if capture.full_size is not None or capture.state == "captured":
        return
    capture.full_size = _load(data)


def _load(data: bytes | None) -> StepRecord | str:
    if data is None:
        return (
            "the step's arithmetic ran at a smaller batch, and its full-size check on fake "
            "tensors recorded no training step to forecast"
        )
    try:
        record = pickle.loads(data)
    except Exception as exc:  # a torch function of another version, say
        return f"the full-size step's record could not be handed over ({exc})"
    return record if isinstance(record, StepRecord | str) else "no full-size step record"
