"""The hunt's state and its decisions: an origin for each non-finite value written, and the
places where one counts (the loss, a parameter's gradient, a parameter), where the job ends.

``Hunt`` is the object the job's other parts talk to: the mode calls ``after_op``, backward
hooks ``after_backward_function``, the DataLoader limit ``batch_taken``, the loss recorder
``before_backward``; the optimizer hooks check gradients and parameters around each step.
It is a job observer too: a training step lets go of the frames held two steps ago.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import torch
from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

from quickdev.events import BaseObserver
from quickdev.limits.nonfinite.backward import ForwardSite, backward_origin
from quickdev.limits.nonfinite.found import FrameChain, NonFiniteFound
from quickdev.limits.nonfinite.mode import HuntMode, in_place, results, written
from quickdev.limits.nonfinite.provenance import Origin, Provenance
from quickdev.limits.nonfinite.report import batch_row, report
from quickdev.limits.nonfinite.sites import ModuleStack, frame_chain, op_name, user_frame
from quickdev.limits.nonfinite.values import (
    all_finite,
    first_nonfinite,
    floating,
    nonfinite_argument,
    numbers_in,
    stats,
    tensors_in,
)
from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder
from quickdev.rundir.result import LoaderStats, NonfiniteSample

log = logging.getLogger(__name__)

# Calls whose values come from outside the code: a storage read from a file or buffer.
FROM_STORAGE = frozenset({"set_", "frombuffer", "from_file", "from_dlpack"})
MAX_INPUTS_SHOWN = 4
# Frames held for the debugger at most (an evaluation loop takes no training step).
MAX_HELD = 20_000
# Autograd nodes one call may add (a composite function's inner ones); the key that marks
# a node hooked, in the metadata dict autograd keeps on each node.
MAX_NODES_PER_CALL = 64
_HOOKED = "quickdev.nonfinite"


class Hunt(BaseObserver):
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.provenance = Provenance()
        self.stack = ModuleStack()
        self.active = True
        self.busy = False  # the hunt's own torch calls, outside the mode's handler
        self.fetching = False  # set by the DataLoader limit while a batch is fetched
        self.in_optimizer = False
        self._batches_taken = 0
        self._indices: Any = None  # what the loader asked its dataset for, last
        # What holds the user's frames (for the debugger): this step's, the last one's.
        self._held: list[list[Origin | ForwardSite]] = [[], []]
        self.recent: list[Origin] = []

    def install(self, patcher: Patcher) -> None:
        self.stack.install(patcher)
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
            with torch._C.DisableTorchFunction():
                yield
        finally:
            self.busy = False

    def broken(self) -> None:
        """A check failed (a tensor type it does not know): said once, the script goes on."""
        if self.active:
            log.warning("the NaN hunt stopped checking after an error", exc_info=True)
        self.active = False

    # --- where the job is --------------------------------------------------------------

    def phase(self) -> str:
        if self.fetching:
            return "data"
        if self.in_optimizer:
            return "optimizer"
        if self.stack.modules or len(self.stack.roots) or self._batches_taken:
            return "forward"
        return "setup" if not self.recorder.steps else "forward"

    def step(self, phase: str) -> int:
        """The training step under way (1 is the first; 0 before training)."""
        recorder = self.recorder
        if phase == "setup":
            return 0
        if recorder.optimizer_seen or phase == "data":
            return recorder.steps + 1
        return max(recorder.steps, 1)  # hand-written SGD counts a step at its forward

    def on_train_step(self, step: int, step_time_s: float) -> None:
        self.in_optimizer = False
        self._release(self._held.pop(0))
        self._held.append([])
        del self.recent[: max(len(self.recent) - 100, 0)]

    def _hold(self, item: Origin | ForwardSite) -> None:
        current = self._held[-1]
        current.append(item)
        if len(current) > MAX_HELD:
            self._release(current[: MAX_HELD // 2])
            del current[: MAX_HELD // 2]

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
        for t in results(out, args):
            if not floating(t):
                continue
            if t.requires_grad:
                self._watch_backward(func, t)
            if all_finite(t):
                self.provenance.forget(t)
            else:
                self._nonfinite(func, name, args, kwargs, t, None)

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
        site = ForwardSite(func, frame, self.stack.current(), self.step("forward"))
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
        if origin is None:
            for x in tensors_in((args, kwargs)):
                if x is t or x is target or not floating(x) or all_finite(x):
                    continue
                origin = self.provenance.of(x) or self._origin(
                    func, "input", args, kwargs, t, target
                )
                break
        if origin is None:
            detail = nonfinite_argument(args, kwargs)
            cause = "argument" if detail else ("input" if name in FROM_STORAGE else "produced")
            origin = self._origin(func, cause, args, kwargs, t, target, detail)
        self.provenance.mark(target if target is not None else t, origin)
        if target is not None and _is_parameter(target):
            name = self.stack.parameter_name(target)
            self._reach(origin, f"the parameter {name}", self.step("optimizer"))

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
        updated = target is not None and _is_parameter(target)
        phase = "optimizer" if updated else self.phase()
        module = self.stack.path(self.stack.current())
        if updated:
            module = self.stack.parameter_owner(target)
        if detail is None and cause == "produced":
            detail = numbers_in(args, kwargs)
        inputs = [
            stats(x)
            for x in tensors_in((args, kwargs))
            if x is not t and x is not target and floating(x)
        ]
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
            inputs=inputs[:MAX_INPUTS_SHOWN],
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

    # --- data ---------------------------------------------------------------------------

    def watch_loader(self, iterator: Iterator[Any]) -> None:
        """Remember the dataset indices of each batch (the loader's own iterator)."""
        next_index = getattr(iterator, "_next_index", None)
        if next_index is None:
            return

        def remembered() -> Any:
            self._indices = next_index()
            return self._indices

        with suppress(AttributeError):
            iterator._next_index = remembered  # type: ignore[attr-defined]

    def batch_taken(self, loader: LoaderStats, batch: Any) -> None:
        self._batches_taken += 1
        if not self.active:
            return
        try:
            with self.checking():
                for t in tensors_in(batch):
                    if floating(t) and not all_finite(t):
                        loader.nonfinite = True
                        self._sample(loader, t)
        except Exception:
            self.broken()

    def _sample(self, loader: LoaderStats, t: torch.Tensor) -> None:
        origin = self.provenance.of(t)
        if origin is None:
            origin = _data_origin(t, self.step("data"))
            self.keep(origin)
        if origin.sample is None:
            row = batch_row(t)
            indices = self._indices
            index = None
            if isinstance(indices, list | tuple) and row < len(indices):
                index = indices[row] if isinstance(indices[row], int) else None
            elif isinstance(indices, int):
                index = indices
            origin.sample = NonfiniteSample(loader=loader.origin, row=row, dataset_index=index)
        self.provenance.mark(t, origin)

    # --- where a non-finite value counts -------------------------------------------------

    def before_backward(self, loss: Any) -> None:
        if not self.active or not isinstance(loss, torch.Tensor) or not floating(loss):
            return
        with self.checking():
            finite = all_finite(loss)
        if not finite:
            origin = self.provenance.of(loss) or self._fallback("forward")
            self._reach(origin, "the loss", self.step("forward"))

    def _before_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.in_optimizer = True
        if not self.active:
            return
        with self.checking():
            parameters = [p for p in _parameters(optimizer) if p.grad is not None]
            grads = [p.grad for p in parameters if p.grad is not None]
            bad = first_nonfinite([g for g in grads if floating(g)])
        if bad is not None:
            parameter, grad = parameters[bad], grads[bad]
            origin = self.provenance.of(grad) or self._fallback("backward")
            name = self.stack.parameter_name(parameter)
            self._reach(origin, f"the gradient of {name}", self.step("optimizer"))

    def _after_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.in_optimizer = False
        if not self.active:
            return
        with self.checking():
            parameters = [p for p in _parameters(optimizer) if floating(p)]
            bad = first_nonfinite(parameters)
        if bad is not None:
            parameter = parameters[bad]
            origin = self.provenance.of(parameter) or self._fallback("optimizer")
            name = self.stack.parameter_name(parameter)
            self._reach(origin, f"the parameter {name}", self.recorder.steps)

    def _fallback(self, phase: str) -> Origin:
        """A sink holds a value whose origin is not on record: the latest origin of that
        phase, else one for the place the value was found."""
        for origin in reversed(self.recent):
            if origin.phase == phase:
                return origin
        frame = user_frame(sys._getframe(2))
        return Origin(
            op="an operation the hunt did not see",
            cause="input",
            phase=phase,
            step=self.step(phase),
            file=frame.f_code.co_filename if frame else None,
            line=frame.f_lineno if frame else None,
            function=frame.f_code.co_name if frame else None,
            module=None,
            frames=frame_chain(frame),
        )

    def _reach(self, origin: Origin, reached: str, step: int) -> None:
        self.active = False
        found = report(origin, reached, step)
        self.recorder.first_nonfinite = found
        chain: FrameChain = origin.frames or frame_chain(user_frame(sys._getframe(1)))
        raise NonFiniteFound(found, chain)


def _metadata(node: Any) -> dict[str, Any]:
    """The dict autograd keeps on each node for whoever needs one (anomaly mode's
    traceback, ours: the mark of a hooked node)."""
    metadata: dict[str, Any] = node.metadata
    return metadata


def _is_parameter(t: torch.Tensor) -> bool:
    """A write into a trainable leaf, which only an update (optimizer or by hand, under
    no_grad) may make: the parameter itself changed."""
    return t.is_leaf and t.requires_grad and not torch.is_grad_enabled()


def _parameters(optimizer: Any) -> Iterator[torch.Tensor]:
    for group in getattr(optimizer, "param_groups", []):
        for p in group.get("params", []):
            if isinstance(p, torch.Tensor):
                yield p


def _data_origin(t: torch.Tensor, step: int) -> Origin:
    frame = user_frame(sys._getframe(3))
    return Origin(
        op="a DataLoader batch",
        cause="input",
        phase="data",
        step=step,
        file=frame.f_code.co_filename if frame else None,
        line=frame.f_lineno if frame else None,
        function=frame.f_code.co_name if frame else None,
        module=None,
        output=stats(t),
        frames=frame_chain(frame),
    )
