"""Backward functions, checked by a hook on each node of the autograd graph.

The mode does not see backward (autograd runs it in C++), so each node a forward call
creates gets a hook that knows that call: the operation, the user's line and the module.
A node that produces a NaN/Inf gradient from finite incoming gradients is an origin (the
backward of ``sqrt`` at 0, ``0 * inf`` under a ``where``), told with the forward values
the node kept (``sqrt``'s result, a norm's input): a derivative is infinite where one of
them is 0. A node fed non-finite gradients passes their origin on.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from typing import Any

import torch

from quickdev.limits.nonfinite.provenance import Origin
from quickdev.limits.nonfinite.sites import ForwardSite, op_name, user_frame
from quickdev.limits.nonfinite.state import HuntState
from quickdev.limits.nonfinite.values import all_finite, floating, stats
from quickdev.rundir.nonfinite_origin import TensorStats

# Autograd nodes one call may add (a composite function's inner ones); the key that marks
# a node hooked, in the metadata dict autograd keeps on each node.
MAX_NODES_PER_CALL = 64
_HOOKED = "quickdev.nonfinite"
_SAVED = "_saved_"
MAX_GRADIENTS_SHOWN = 4
# Backward functions that only move or pass on their gradient (views, transposes, a clone,
# a residual's add): finite in, finite out. They are not hooked (three nodes in four of a
# transformer's graph); a non-finite gradient through one keeps its storage (a view) or is
# taken for the one this backward pass found before (backward_origin).
PASS_THROUGH = frozenset(
    {
        "AddBackward0",
        "AliasBackward0",
        "CloneBackward0",
        "PermuteBackward0",
        "ReshapeAliasBackward0",
        "SelectBackward0",
        "SliceBackward0",
        "SplitBackward0",
        "SplitWithSizesBackward0",
        "SqueezeBackward0",
        "SqueezeBackward1",
        "SqueezeBackward2",
        "TBackward0",
        "TransposeBackward0",
        "TransposeBackward1",
        "UnbindBackward0",
        "UnsafeViewBackward0",
        "UnsqueezeBackward0",
        "ViewBackward0",
    }
)


def watch(state: HuntState, func: Callable[..., Any], t: torch.Tensor) -> None:
    """Hook the nodes this call added to the autograd graph: its output's, and those a
    composite call made inside (``F.cross_entropy``: log-softmax, then NLL), down to the
    nodes of its inputs, hooked when they were made."""
    try:
        node = t.grad_fn
    except RuntimeError:
        # A view torch gives no node for (made under no_grad or in inference mode, then
        # its base written in place): it is in no graph, so there is nothing to watch.
        return
    if node is None or _HOOKED in _metadata(node):
        return
    frame = user_frame(sys._getframe(3))
    site = ForwardSite(func, frame, state.modules.current(), state.step("forward"))
    state.hold(site)
    hook = functools.partial(after_backward_function, state, site)
    todo = [node]
    for _ in range(MAX_NODES_PER_CALL):
        if not todo:
            break
        node = todo.pop()
        _metadata(node)[_HOOKED] = True
        if type(node).__name__ not in PASS_THROUGH:
            node.register_hook(hook)
        for following, _ in node.next_functions:
            if (
                following is not None
                and _HOOKED not in _metadata(following)
                and type(following).__name__ != "AccumulateGrad"
            ):
                todo.append(following)


def after_backward_function(
    state: HuntState,
    site: ForwardSite,
    grad_inputs: tuple[Any, ...],
    grad_outputs: tuple[Any, ...],
) -> None:
    # Runs for every node of every backward: kept to a sum per gradient in the usual case.
    if not state.following:
        return
    try:
        with state.checking():
            bad = None
            for g in grad_inputs:
                if g is not None and not _finite_gradient(g):
                    bad = [g for g in grad_inputs if g is not None and not all_finite(g)]
                    break
            if bad is None:
                if state.provenance:
                    for g in grad_inputs:
                        if g is not None:
                            state.provenance.forget(g)
                return
            origin = backward_origin(state, site, grad_outputs, bad[0])
            for g in bad:
                state.provenance.mark(g, origin)
    except Exception:
        state.failures.failed(f"the backward of {op_name(site.func)}", site.file, site.line)


def _finite_gradient(g: torch.Tensor) -> bool:
    """``all_finite`` for a gradient (a dense floating tensor that requires no grad), in
    one reduction; an overflowing sum of finite values is told apart by ``all_finite``."""
    if not g.is_floating_point() or g.is_sparse:
        return True
    return math.isfinite(g.sum().item()) or all_finite(g)


def backward_origin(
    state: HuntState, site: ForwardSite, grad_outputs: tuple[Any, ...], produced: torch.Tensor
) -> Origin:
    """The origin of a backward function's non-finite gradient ``produced``."""
    incoming = [g for g in grad_outputs if g is not None and floating(g)]
    for g in incoming:
        if not all_finite(g):
            known = state.provenance.of(g) or _earlier_in_backward(state)
            if known is not None:
                return known
            return _origin(state, site, "input", incoming, produced)
    return _origin(state, site, "produced", incoming, produced)


def _earlier_in_backward(state: HuntState) -> Origin | None:
    """Gradients from several uses of a tensor are summed by autograd into a new buffer that
    no hook wrote: their origin is the one this backward pass found before."""
    step = state.step("backward")
    for origin in reversed(state.recent):
        if origin.phase == "backward" and origin.step == step:
            return origin
    return None


def _origin(
    state: HuntState,
    site: ForwardSite,
    cause: str,
    incoming: list[torch.Tensor],
    produced: torch.Tensor,
) -> Origin:
    node = torch._C._current_autograd_node()
    origin = Origin(
        op=op_name(site.func),
        cause=cause,
        phase="backward",
        step=state.step("backward"),
        file=site.file,
        line=site.line,
        function=site.function,
        module=state.modules.path(site.module),
        detail=node.name() if node is not None else None,
        inputs=[stats(g) for g in incoming[:MAX_GRADIENTS_SHOWN]],
        output=stats(produced),
        frames=site.frames,
        forward=kept_for_backward(node) if cause == "produced" else {},
    )
    state.keep(origin)
    return origin


def kept_for_backward(node: Any) -> dict[str, TensorStats]:
    """The forward values a backward node kept (autograd's saved tensors: ``sqrt``'s
    ``result``, a norm's ``self`` and ``result``), by the name autograd gives them."""
    kept: dict[str, TensorStats] = {}
    if node is None:
        return kept
    for attribute in dir(node):
        if not attribute.startswith(_SAVED):
            continue
        try:
            value = getattr(node, attribute)
        except Exception:  # freed already, or a value autograd cannot hand back
            continue
        if isinstance(value, torch.Tensor) and floating(value):
            kept[attribute.removeprefix(_SAVED)] = stats(value)
    return kept


def _metadata(node: Any) -> dict[str, Any]:
    """The dict autograd keeps on each node for whoever needs one (anomaly mode's
    traceback, ours: the mark of a node seen)."""
    metadata: dict[str, Any] = node.metadata
    return metadata
