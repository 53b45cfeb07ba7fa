"""The places where a non-finite value counts: the loss backward is called on, a parameter's
gradient before the optimizer step, a parameter after it. The first one reached ends the
hunt with the origin of that value."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any, NoReturn

import torch

from quickdev.limits.nonfinite.found import FrameChain, NonFiniteFound
from quickdev.limits.nonfinite.provenance import Origin
from quickdev.limits.nonfinite.report import report
from quickdev.limits.nonfinite.sites import frame_chain, user_frame
from quickdev.limits.nonfinite.state import HuntState
from quickdev.limits.nonfinite.values import all_finite, first_nonfinite, floating, stats


def check_loss(state: HuntState, loss: Any) -> None:
    if not isinstance(loss, torch.Tensor) or not floating(loss):
        return
    with state.checking():
        finite = all_finite(loss)
    if not finite:
        origin = state.provenance.of(loss) or fallback(state, "forward")
        reach(state, origin, "the loss", state.step("forward"))


def check_gradients(state: HuntState, optimizer: Any) -> None:
    """Before the step. A GradScaler that found an overflow skips the step, so this sees
    only gradients the optimizer is about to use."""
    with state.checking():
        parameters = [p for p in _parameters(optimizer) if p.grad is not None]
        grads = [p.grad for p in parameters if p.grad is not None]
        bad = first_nonfinite([g for g in grads if floating(g)])
    if bad is not None:
        origin = state.provenance.of(grads[bad]) or fallback(state, "backward")
        name = state.modules.parameter_name(parameters[bad])
        reach(state, origin, f"the gradient of {name}", state.step("optimizer"))


def check_parameters(state: HuntState, optimizer: Any) -> None:
    with state.checking():
        parameters = [p for p in _parameters(optimizer) if floating(p)]
        bad = first_nonfinite(parameters)
    if bad is not None:
        parameter = parameters[bad]
        origin = state.provenance.of(parameter) or _update(state, optimizer, parameter)
        name = state.modules.parameter_name(parameter)
        reach(state, origin, f"the parameter {name}", state.recorder.steps)


def fallback(state: HuntState, phase: str) -> Origin:
    """A sink holds a value whose origin is not on record: the latest origin of that phase,
    else one for the place the value was found."""
    for origin in reversed(state.recent):
        if origin.phase == phase:
            return origin
    frame = user_frame(sys._getframe(2))
    return Origin(
        op="an operation the hunt did not see",
        cause="input",
        phase=phase,
        step=state.step(phase),
        file=frame.f_code.co_filename if frame else None,
        line=frame.f_lineno if frame else None,
        function=frame.f_code.co_name if frame else None,
        module=None,
        frames=frame_chain(frame),
    )


def _update(state: HuntState, optimizer: Any, parameter: torch.Tensor) -> Origin:
    """The optimizer's step made a parameter non-finite from finite gradients (they were
    checked before it) and a finite parameter (checked after the step before)."""
    frame = user_frame(sys._getframe(2))
    kind = type(optimizer)
    found = getattr(torch.optim, kind.__name__, None) is kind
    where = "torch.optim" if found else kind.__module__
    rate = next(
        (
            group.get("lr")
            for group in getattr(optimizer, "param_groups", [])
            if any(p is parameter for p in group.get("params", []))
        ),
        None,
    )
    grad = parameter.grad
    origin = Origin(
        op=f"{where}.{kind.__qualname__}.step",
        cause="produced",
        phase="optimizer",
        step=state.recorder.steps,
        file=frame.f_code.co_filename if frame else None,
        line=frame.f_lineno if frame else None,
        function=frame.f_code.co_name if frame else None,
        module=state.modules.parameter_owner(parameter),
        detail=f"lr={float(rate):g}" if isinstance(rate, int | float) else None,
        inputs=[stats(grad)] if grad is not None else [],
        output=stats(parameter),
        frames=frame_chain(frame),
    )
    state.keep(origin)
    return origin


def reach(state: HuntState, origin: Origin, reached: str, step: int) -> NoReturn:
    state.active = False
    found = report(origin, reached, step)
    state.recorder.first_nonfinite = found
    chain: FrameChain = origin.frames or frame_chain(user_frame(sys._getframe(1)))
    raise NonFiniteFound(found, chain)


def _parameters(optimizer: Any) -> Iterator[torch.Tensor]:
    for group in getattr(optimizer, "param_groups", []):
        for p in group.get("params", []):
            if isinstance(p, torch.Tensor):
                yield p
