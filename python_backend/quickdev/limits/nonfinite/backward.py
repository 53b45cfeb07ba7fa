"""Backward functions, checked by a hook on each node of the autograd graph.

The mode does not see backward (autograd runs it in C++), so each node a forward call
creates gets a hook that knows that call: the operation, the user's line and the module.
A node that produces a NaN/Inf gradient from finite incoming gradients is an origin (the
backward of ``sqrt`` at 0, ``0 * inf`` under a ``where``); one fed non-finite gradients
passes their origin on.
"""

from __future__ import annotations

from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from quickdev.limits.nonfinite.found import FrameChain
from quickdev.limits.nonfinite.provenance import Origin
from quickdev.limits.nonfinite.sites import frame_chain, op_name
from quickdev.limits.nonfinite.values import all_finite, floating, stats

if TYPE_CHECKING:
    from quickdev.limits.nonfinite.hunt import Hunt


class ForwardSite:
    """Where a forward call ran, kept with its node until backward. The frame itself is let
    go when the training step ends (a frame holds its locals: the step's tensors)."""

    __slots__ = ("file", "frame", "func", "function", "line", "module", "step")

    def __init__(
        self,
        func: Callable[..., Any],
        frame: FrameType | None,
        module: nn.Module | None,
        step: int,
    ) -> None:
        self.func = func
        self.frame = frame
        self.line = frame.f_lineno if frame else None
        self.file = frame.f_code.co_filename if frame else None
        self.function = frame.f_code.co_name if frame else None
        self.module = module
        self.step = step

    @property
    def frames(self) -> FrameChain | None:
        """The user's frames as they were (the call's own line, its callers' lines now)."""
        frame = self.frame
        if frame is None or self.line is None:
            return None
        outer = frame_chain(frame.f_back) if frame.f_back is not None else []
        return [*outer, (frame, self.line)]


def backward_origin(
    hunt: Hunt, site: ForwardSite, grad_outputs: tuple[Any, ...], produced: torch.Tensor
) -> Origin:
    """The origin of a backward function's non-finite gradient ``produced``."""
    incoming = [g for g in grad_outputs if g is not None and floating(g)]
    for g in incoming:
        if not all_finite(g):
            known = hunt.provenance.of(g) or _earlier_in_backward(hunt)
            if known is not None:
                return known
            return _origin(hunt, site, "input", incoming, produced)
    return _origin(hunt, site, "produced", incoming, produced)


def _earlier_in_backward(hunt: Hunt) -> Origin | None:
    """Gradients from several uses of a tensor are summed by autograd into a new buffer that
    no hook wrote: their origin is the one this backward pass found before."""
    step = hunt.step("backward")
    for origin in reversed(hunt.recent):
        if origin.phase == "backward" and origin.step == step:
            return origin
    return None


def _origin(
    hunt: Hunt, site: ForwardSite, cause: str, incoming: list[torch.Tensor], produced: torch.Tensor
) -> Origin:
    node = torch._C._current_autograd_node()
    origin = Origin(
        op=op_name(site.func),
        cause=cause,
        phase="backward",
        step=hunt.step("backward"),
        file=site.file,
        line=site.line,
        function=site.function,
        module=hunt.modules.path(site.module),
        detail=node.name() if node is not None else None,
        inputs=[stats(g) for g in incoming[:4]],
        output=stats(produced),
        frames=site.frames,
    )
    hunt.keep(origin)
    return origin
