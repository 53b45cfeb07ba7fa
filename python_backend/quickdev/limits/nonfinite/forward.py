"""What each torch call wrote, as the mode (``mode.py``) hands it over: an origin for each
non-finite value, passed on from a non-finite input or made here; the autograd nodes a
call added are handed to ``backward.py`` to be watched.

A call given non-finite values that returns finite ones (softmax over a ``-inf`` mask)
marks their origin as non-finite by design; a NaN new in a call that meets such a value is
that call's own (a row masked whole: ``masking.py`` says so).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

from quickdev.limits.nonfinite import backward, masking, sinks
from quickdev.limits.nonfinite.mode import in_place, results, written
from quickdev.limits.nonfinite.provenance import Origin
from quickdev.limits.nonfinite.sites import frame_chain, op_name, user_frame
from quickdev.limits.nonfinite.state import HuntState
from quickdev.limits.nonfinite.values import (
    all_finite,
    floating,
    kinds_of,
    nonfinite_argument,
    numbers_in,
    tensors_in,
)

# Calls whose values come from outside the code: a storage read from a file or buffer.
FROM_STORAGE = frozenset({"set_", "frombuffer", "from_file", "from_dlpack"})
MAX_INPUTS_SHOWN = 4


def after_op(
    state: HuntState,
    func: Callable[..., Any],
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    out: Any,
    gpu: str | None = None,
) -> None:
    """``gpu``: why the call would overflow on a GPU, where it made its ``inf`` as a GPU
    would (float16.py)."""
    if in_place(name, kwargs):
        for target in written(name, args, kwargs):
            if floating(target):
                _after_write(state, func, name, args, kwargs, target, gpu)
        return
    finite = None
    for t in results(out, args):
        if not floating(t):
            continue
        if t.requires_grad:
            backward.watch(state, func, t)
        if all_finite(t):
            state.provenance.forget(t)
            finite = True if finite is None else finite
        else:
            finite = False
            _nonfinite(state, func, name, args, kwargs, t, None, gpu)
    if finite and state.provenance:
        _note_absorbed(state, args, kwargs)


def _note_absorbed(state: HuntState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A call given non-finite values returned finite ones (softmax over a ``-inf``
    mask): their origin is non-finite by design, here and on the steps to come."""
    for x in tensors_in((args, kwargs)):
        origin = state.provenance.of(x)
        if (
            origin is not None
            and origin.site not in state.by_design
            and floating(x)
            and not all_finite(x)
        ):
            state.by_design.add(origin.site)


def _by_design(state: HuntState, origin: Origin, t: torch.Tensor) -> bool:
    """Whether ``t``'s NaN is new rather than passed on from ``origin``: its values are
    non-finite by design and held no NaN (a mask's ``-inf`` meeting an overflow inside
    one call, a row masked whole)."""
    if origin.site not in state.by_design:
        return False
    output = origin.settle().output
    if output is None or output.nan:
        return False
    return bool(torch.isnan(t).any())


def _after_write(
    state: HuntState,
    func: Callable[..., Any],
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    target: torch.Tensor,
    gpu: str | None,
) -> None:
    # Under no_grad a write adds nothing to the graph: there is no node to watch (and a
    # view made under no_grad, as Embedding's padding_idx init and an EMA update write
    # them, has none torch will give).
    if target.requires_grad and torch.is_grad_enabled():
        backward.watch(state, func, target)
    checked = target
    if name == "__setitem__" and len(args) > 1:
        try:
            checked = target[args[1]]  # only what was written
        except Exception:
            checked = target
    if all_finite(checked):
        if checked is target:
            state.provenance.forget(target)
        return
    _nonfinite(state, func, name, args, kwargs, checked, target, gpu)


def _nonfinite(
    state: HuntState,
    func: Callable[..., Any],
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    t: torch.Tensor,
    target: torch.Tensor | None,
    gpu: str | None,
) -> None:
    """``t`` (or what was written of ``target``) holds a NaN/Inf: pass on the origin of
    a non-finite input, or make this call the origin."""
    origin = state.provenance.of(target) if target is not None else None
    designed = origin if origin is not None and _by_design(state, origin, t) else None
    if designed is not None:
        origin = None
    if origin is None:
        mask = _mask_origin(state, args, kwargs, t)
        # A mask's -inf is given (a fill) or by design; an overflow's -inf is not a mask.
        if mask is None or mask.cause == "argument" or mask.site in state.by_design:
            masked = masking.fully_masked(name, args, kwargs, t)
            if masked is not None:  # the row that kept nothing is the fault, not the mask
                origin = _origin(state, func, "produced", args, kwargs, t, target)
                origin.masked = masked
                if mask is not None:
                    origin.designed = mask.site
                    origin.designed_kinds = kinds_of(mask)
    if origin is None:
        for x in tensors_in((args, kwargs)):
            if x is t or x is target or not floating(x) or all_finite(x):
                continue
            known = state.provenance.of(x)
            if known is not None and _by_design(state, known, t):
                designed = designed or known
                continue
            origin = known or _origin(state, func, "input", args, kwargs, t, target)
            break
    if origin is None and designed is not None:
        origin = _origin(state, func, "produced", args, kwargs, t, target)
        origin.designed = designed.site
        origin.designed_kinds = kinds_of(designed)
    if origin is None:
        detail = nonfinite_argument(args, kwargs)
        cause = "argument" if detail else ("input" if name in FROM_STORAGE else "produced")
        origin = _origin(state, func, cause, args, kwargs, t, target, detail)
        origin.gpu = gpu
    state.provenance.mark(target if target is not None else t, origin)
    if target is not None and _is_parameter(state, target):
        name = state.modules.parameter_name(target)
        sinks.reach(state, origin, f"the parameter {name}", state.step("optimizer"))


def _mask_origin(
    state: HuntState, args: tuple[Any, ...], kwargs: dict[str, Any], t: torch.Tensor
) -> Origin | None:
    """The origin of the non-finite values a call was given (a mask's ``-inf``), when on
    record."""
    if not state.provenance:
        return None
    for x in tensors_in((args, kwargs)):
        if x is not t and floating(x):
            known = state.provenance.of(x)
            if known is not None:
                return known
    return None


def _is_parameter(state: HuntState, t: torch.Tensor) -> bool:
    """A write into a trainable leaf (which only an update under no_grad may make), or
    into a parameter's memory through ``.data``: the parameter itself changed."""
    if not t.is_leaf:
        return False
    if t.requires_grad:
        return not torch.is_grad_enabled()
    return state.modules.parameter_at(t) is not None


def _origin(
    state: HuntState,
    func: Callable[..., Any],
    cause: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    t: torch.Tensor,
    target: torch.Tensor | None,
    detail: str | None = None,
) -> Origin:
    frame = user_frame(sys._getframe(1))
    updated = target is not None and _is_parameter(state, target)
    phase = "optimizer" if updated else state.phase()
    module = state.modules.path(state.modules.current())
    if updated:
        module = state.modules.parameter_owner(target)
    if detail is None and cause == "produced":
        detail = numbers_in(args, kwargs)
    inputs: list[torch.Tensor] = []
    for x in tensors_in((args, kwargs)):
        if x is not t and x is not target and floating(x) and all(x is not i for i in inputs):
            inputs.append(x)
    origin = Origin(
        op=op_name(func),
        cause=cause,
        phase=phase,
        step=state.step(phase),
        file=frame.f_code.co_filename if frame else None,
        line=frame.f_lineno if frame else None,
        function=frame.f_code.co_name if frame else None,
        module=module,
        detail=detail,
        frames=frame_chain(frame),
        pending=(inputs[:MAX_INPUTS_SHOWN], t),
    )
    state.keep(origin)
    return origin
