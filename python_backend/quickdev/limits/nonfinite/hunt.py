"""The hunt's state and its decisions: an origin for each non-finite value written, and the
places where one counts (the loss, a parameter's gradient, a parameter), where the job ends.

``Hunt`` is the object the job's other parts talk to: the mode calls ``after_op``, backward
hooks ``after_backward_function``, the DataLoader limit ``batch_taken``, the loss recorder
``before_backward``; the optimizer hooks check gradients and parameters around each step.
It is a job observer too: at the end of each training step it lets go of the frames it held.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

from quickdev.events import BaseObserver
from quickdev.limits.nonfinite import data, sinks
from quickdev.limits.nonfinite.backward import ForwardSite, backward_origin
from quickdev.limits.nonfinite.mode import HuntMode, in_place, results, written
from quickdev.limits.nonfinite.modules import Modules
from quickdev.limits.nonfinite.provenance import Origin, Provenance
from quickdev.limits.nonfinite.sites import frame_chain, op_name, user_frame
from quickdev.limits.nonfinite.values import (
    all_finite,
    floating,
    kinds_of,
    nonfinite_argument,
    numbers_in,
    stats,
    tensors_in,
)
from quickdev.limits.own_work import own_work
from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder
from quickdev.rundir.result import LoaderStats

log = logging.getLogger(__name__)

# Calls whose values come from outside the code: a storage read from a file or buffer.
FROM_STORAGE = frozenset({"set_", "frombuffer", "from_file", "from_dlpack"})
MAX_INPUTS_SHOWN = 4
BROKEN = "quickdev: the NaN hunt stopped checking after an internal error"
# Frames held for the debugger at most (an evaluation loop takes no training step).
MAX_HELD = 20_000
# Autograd nodes one call may add (a composite function's inner ones); the key that marks
# a node hooked, in the metadata dict autograd keeps on each node.
MAX_NODES_PER_CALL = 64
_HOOKED = "quickdev.nonfinite"


class Hunt(BaseObserver, feature="the NaN hunt"):
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.provenance = Provenance()
        self.modules = Modules()
        self.active = True
        self.busy = False  # the hunt's own torch calls, outside the mode's handler
        self.fetching = False  # set by the DataLoader limit while a batch is fetched
        self.in_optimizer = False
        self._batches_taken = 0
        self.indices: Any = None  # what the loader asked its dataset for, last
        # What holds the user's frames (for the debugger), this training step's: a frame
        # keeps its locals alive, so they are let go when the step ends.
        self._held: list[Origin | ForwardSite] = []
        self.recent: list[Origin] = []
        # Origins (operation, line) whose non-finite values a later call made finite again.
        self.by_design: set[tuple[str, str | None, int | None]] = set()

    def install(self, patcher: Patcher) -> None:
        self.modules.install(patcher)
        pre = register_optimizer_step_pre_hook(self._before_optimizer_step)
        post = register_optimizer_step_post_hook(self._after_optimizer_step)
        patcher.on_undo(pre.remove)
        patcher.on_undo(post.remove)
        mode = HuntMode(self)
        mode.__enter__()  # type: ignore[no-untyped-call]
        patcher.on_undo(lambda: self._leave(mode))

    def _leave(self, mode: HuntMode) -> None:
        self.active = False
        try:
            mode.__exit__(None, None, None)  # type: ignore[no-untyped-call]
        except Exception:  # the script left its own modes open: ours stays, inactive
            log.info("the NaN hunt's mode could not be left", exc_info=True)

    @contextmanager
    def checking(self) -> Iterator[None]:
        """The hunt's own torch calls from hooks: not seen by its mode (nor by any)."""
        self.busy = True
        try:
            with own_work():
                yield
        finally:
            self.busy = False

    def broken(self) -> None:
        """A check failed (a tensor type it does not know): the script goes on, and the user
        is told once, so that "nothing found" is not taken for an answer."""
        if self.active:
            log.warning("the NaN hunt stopped checking after an error", exc_info=True)
            error = sys.exc_info()[1]
            stderr = sys.__stderr__ or sys.stderr
            stderr.write(
                f"{BROKEN}: {type(error).__name__}: {error} (step {self.recorder.steps}; "
                "see job.log)\n"
            )
        self.active = False

    # --- where the job is --------------------------------------------------------------

    def phase(self) -> str:
        if self.fetching:
            return "data"
        if self.in_optimizer:
            return "optimizer"
        if self.modules.running or len(self.modules.roots) or self._batches_taken:
            return "forward"
        return "setup" if not self.recorder.steps else "forward"

    def step(self, phase: str) -> int:
        """The training step under way (1 is the first; 0 before training)."""
        recorder = self.recorder
        if phase == "setup":
            return 0
        if recorder.closure_pass_counted:
            return recorder.steps  # the update of a step whose closure was counted
        if recorder.optimizer_seen or phase == "data":
            return recorder.steps + 1
        return max(recorder.steps, 1)  # hand-written SGD counts a step at its forward

    def on_train_step(self, step: int, step_time_s: float) -> None:
        self.in_optimizer = False
        self._release(self._held)
        self._held = []
        del self.recent[: max(len(self.recent) - 100, 0)]

    def _hold(self, item: Origin | ForwardSite) -> None:
        self._held.append(item)
        if len(self._held) > MAX_HELD:
            self._release(self._held[: MAX_HELD // 2])
            del self._held[: MAX_HELD // 2]

    @staticmethod
    def _release(items: list[Origin | ForwardSite]) -> None:
        for item in items:
            if isinstance(item, ForwardSite):
                item.frame = None
            else:
                item.frames = None

    # --- forward: the mode --------------------------------------------------------------

    def after_op(
        self,
        func: Callable[..., Any],
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        out: Any,
    ) -> None:
        if in_place(name, kwargs):
            for target in written(name, args, kwargs):
                if floating(target):
                    self._after_write(func, name, args, kwargs, target)
            return
        finite = None
        for t in results(out, args):
            if not floating(t):
                continue
            if t.requires_grad:
                self._watch_backward(func, t)
            if all_finite(t):
                self.provenance.forget(t)
                finite = True if finite is None else finite
            else:
                finite = False
                self._nonfinite(func, name, args, kwargs, t, None)
        if finite and self.provenance:
            self._note_absorbed(args, kwargs)

    def _note_absorbed(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """A call given non-finite values returned finite ones (softmax over a ``-inf``
        mask): their origin is non-finite by design, here and on the steps to come."""
        for x in tensors_in((args, kwargs)):
            origin = self.provenance.of(x)
            if (
                origin is not None
                and origin.site not in self.by_design
                and floating(x)
                and not all_finite(x)
            ):
                self.by_design.add(origin.site)

    def _by_design(self, origin: Origin, t: torch.Tensor) -> bool:
        """Whether ``t``'s NaN is new rather than passed on from ``origin``: its values are
        non-finite by design and held no NaN (a mask's ``-inf`` meeting an overflow inside
        one call, a row masked whole)."""
        if origin.site not in self.by_design or origin.output is None or origin.output.nan:
            return False
        return bool(torch.isnan(t).any())

    def _after_write(
        self,
        func: Callable[..., Any],
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        target: torch.Tensor,
    ) -> None:
        if target.requires_grad:
            self._watch_backward(func, target)
        checked = target
        if name == "__setitem__" and len(args) > 1:
            try:
                checked = target[args[1]]  # only what was written
            except Exception:
                checked = target
        if all_finite(checked):
            if checked is target:
                self.provenance.forget(target)
            return
        self._nonfinite(func, name, args, kwargs, checked, target)

    def _watch_backward(self, func: Callable[..., Any], t: torch.Tensor) -> None:
        """Hook the nodes this call added to the autograd graph: its output's, and those a
        composite call made inside (``F.cross_entropy``: log-softmax, then NLL), down to the
        nodes of its inputs, hooked when they were made."""
        node = t.grad_fn
        if node is None or _HOOKED in _metadata(node):
            return
        frame = user_frame(sys._getframe(3))
        site = ForwardSite(func, frame, self.modules.current(), self.step("forward"))
        self._hold(site)
        hook = functools.partial(self.after_backward_function, site)
        todo = [node]
        for _ in range(MAX_NODES_PER_CALL):
            if not todo:
                break
            node = todo.pop()
            _metadata(node)[_HOOKED] = True
            node.register_hook(hook)
            for following, _ in node.next_functions:
                if (
                    following is not None
                    and _HOOKED not in _metadata(following)
                    and type(following).__name__ != "AccumulateGrad"
                ):
                    todo.append(following)

    def _nonfinite(
        self,
        func: Callable[..., Any],
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        t: torch.Tensor,
        target: torch.Tensor | None,
    ) -> None:
        """``t`` (or what was written of ``target``) holds a NaN/Inf: pass on the origin of
        a non-finite input, or make this call the origin."""
        origin = self.provenance.of(target) if target is not None else None
        designed = origin if origin is not None and self._by_design(origin, t) else None
        if designed is not None:
            origin = None
        if origin is None:
            for x in tensors_in((args, kwargs)):
                if x is t or x is target or not floating(x) or all_finite(x):
                    continue
                known = self.provenance.of(x)
                if known is not None and self._by_design(known, t):
                    designed = designed or known
                    continue
                origin = known or self._origin(func, "input", args, kwargs, t, target)
                break
        if origin is None and designed is not None:
            origin = self._origin(func, "produced", args, kwargs, t, target)
            origin.designed = designed.site
            origin.designed_kinds = kinds_of(designed)
        if origin is None:
            detail = nonfinite_argument(args, kwargs)
            cause = "argument" if detail else ("input" if name in FROM_STORAGE else "produced")
            origin = self._origin(func, cause, args, kwargs, t, target, detail)
        self.provenance.mark(target if target is not None else t, origin)
        if target is not None and self._is_parameter(target):
            name = self.modules.parameter_name(target)
            sinks.reach(self, origin, f"the parameter {name}", self.step("optimizer"))

    def _is_parameter(self, t: torch.Tensor) -> bool:
        """A write into a trainable leaf (which only an update under no_grad may make), or
        into a parameter's memory through ``.data``: the parameter itself changed."""
        if not t.is_leaf:
            return False
        if t.requires_grad:
            return not torch.is_grad_enabled()
        return self.modules.parameter_at(t) is not None

    def _origin(
        self,
        func: Callable[..., Any],
        cause: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        t: torch.Tensor,
        target: torch.Tensor | None,
        detail: str | None = None,
    ) -> Origin:
        frame = user_frame(sys._getframe(1))
        updated = target is not None and self._is_parameter(target)
        phase = "optimizer" if updated else self.phase()
        module = self.modules.path(self.modules.current())
        if updated:
            module = self.modules.parameter_owner(target)
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
            step=self.step(phase),
            file=frame.f_code.co_filename if frame else None,
            line=frame.f_lineno if frame else None,
            function=frame.f_code.co_name if frame else None,
            module=module,
            detail=detail,
            inputs=[stats(x) for x in inputs[:MAX_INPUTS_SHOWN]],
            output=stats(t),
            frames=frame_chain(frame),
        )
        self.keep(origin)
        return origin

    def keep(self, origin: Origin) -> None:
        self._hold(origin)
        self.recent.append(origin)

    # --- backward: hooks on the autograd graph -----------------------------------------

    def after_backward_function(
        self, site: ForwardSite, grad_inputs: tuple[Any, ...], grad_outputs: tuple[Any, ...]
    ) -> None:
        if not self.active or self.busy:
            return
        try:
            with self.checking():
                produced = [g for g in grad_inputs if g is not None and floating(g)]
                bad = [g for g in produced if not all_finite(g)]
                if not bad:
                    for g in produced:
                        self.provenance.forget(g)
                    return
                origin = backward_origin(self, site, grad_outputs, bad[0])
                for g in bad:
                    self.provenance.mark(g, origin)
        except Exception:
            self.broken()

    # --- data and the places where a value counts (data.py, sinks.py) -------------------

    def watch_loader(self, iterator: Iterator[Any]) -> None:
        data.watch_loader(self, iterator)

    def batch_taken(self, loader: LoaderStats, batch: Any) -> None:
        self._batches_taken += 1
        if self.active:
            data.check_batch(self, loader, batch)

    def before_backward(self, loss: Any) -> None:
        if self.active:
            sinks.check_loss(self, loss)

    def _before_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.in_optimizer = True
        if self.active:
            sinks.check_gradients(self, optimizer)

    def _after_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.in_optimizer = False
        if self.active:
            sinks.check_parameters(self, optimizer)


def _metadata(node: Any) -> dict[str, Any]:
    """The dict autograd keeps on each node for whoever needs one (anomaly mode's
    traceback, ours: the mark of a hooked node)."""
    metadata: dict[str, Any] = node.metadata
    return metadata
