"""The places where a non-finite value counts: the loss backward is called on, a parameter's
gradient before the optimizer step, a parameter after it. The first one reached ends the
hunt with the origin of that value."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NoReturn

import torch

from quickdev.limits.nonfinite.found import FrameChain, NonFiniteFound
from quickdev.limits.nonfinite.provenance import Origin
from quickdev.limits.nonfinite.report import report
from quickdev.limits.nonfinite.sites import frame_chain, user_frame
from quickdev.limits.nonfinite.values import all_finite, first_nonfinite, floating

if TYPE_CHECKING:
    from quickdev.limits.nonfinite.hunt import Hunt


def check_loss(hunt: Hunt, loss: Any) -> None:
    if not isinstance(loss, torch.Tensor) or not floating(loss):
        return
    with hunt.checking():
        finite = all_finite(loss)
    if not finite:
        origin = hunt.provenance.of(loss) or fallback(hunt, "forward")
        reach(hunt, origin, "the loss", hunt.step("forward"))


def check_gradients(hunt: Hunt, optimizer: Any) -> None:
    """Before the step. A GradScaler that found an overflow skips the step, so this sees
    only gradients the optimizer is about to use."""
    with hunt.checking():
        parameters = [p for p in _parameters(optimizer) if p.grad is not None]
        grads = [p.grad for p in parameters if p.grad is not None]
        bad = first_nonfinite([g for g in grads if floating(g)])
    if bad is not None:
        origin = hunt.provenance.of(grads[bad]) or fallback(hunt, "backward")
        name = hunt.modules.parameter_name(parameters[bad])
        reach(hunt, origin, f"the gradient of {name}", hunt.step("optimizer"))


def check_parameters(hunt: Hunt, optimizer: Any) -> None:
    with hunt.checking():
        parameters = [p for p in _parameters(optimizer) if floating(p)]
        bad = first_nonfinite(parameters)
    if bad is not None:
        origin = hunt.provenance.of(parameters[bad]) or fallback(hunt, "optimizer")
        name = hunt.modules.parameter_name(parameters[bad])
        reach(hunt, origin, f"the parameter {name}", hunt.recorder.steps)


def fallback(hunt: Hunt, phase: str) -> Origin:
    """A sink holds a value whose origin is not on record: the latest origin of that phase,
    else one for the place the value was found."""
    for origin in reversed(hunt.recent):
        if origin.phase == phase:
            return origin
    frame = user_frame(sys._getframe(2))
    return Origin(
        op="an operation the hunt did not see",
        cause="input",
        phase=phase,
        step=hunt.step(phase),
        file=frame.f_code.co_filename if frame else None,
        line=frame.f_lineno if frame else None,
        function=frame.f_code.co_name if frame else None,
        module=None,
        frames=frame_chain(frame),
    )


def reach(hunt: Hunt, origin: Origin, reached: str, step: int) -> NoReturn:
    hunt.active = False
    found = report(origin, reached, step)
    hunt.recorder.first_nonfinite = found
    chain: FrameChain = origin.frames or frame_chain(user_frame(sys._getframe(1)))
    raise NonFiniteFound(found, chain)


def _parameters(optimizer: Any) -> Iterator[torch.Tensor]:
    for group in getattr(optimizer, "param_groups", []):
        for p in group.get("params", []):
            if isinstance(p, torch.Tensor):
                yield p
