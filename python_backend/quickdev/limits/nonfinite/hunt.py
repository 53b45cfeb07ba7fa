"""The hunt put together: its mode on every torch call, its hooks on the optimizers, its
parts fed from the job's other limits.

``Hunt`` is the object the job's other parts talk to: the DataLoader limit calls
``batch_taken``, the loss recorder ``before_backward``; the optimizer hooks check
gradients and parameters around each step. It is a job observer too: at the end of each
training step it lets go of the frames it held. What it knows lives in ``HuntState``; what
it does with each call, batch and value, in the modules it puts together here.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from typing import Any

from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

from quickdev.events import BaseObserver
from quickdev.limits.device.engine import DeviceEngine
from quickdev.limits.nonfinite import data, forward, sinks
from quickdev.limits.nonfinite.failures import FEATURE
from quickdev.limits.nonfinite.float16 import GpuFloat16
from quickdev.limits.nonfinite.mode import HuntMode
from quickdev.limits.nonfinite.sites import user_frame
from quickdev.limits.nonfinite.state import HuntState
from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder
from quickdev.rundir.result import LoaderStats

log = logging.getLogger(__name__)


class Hunt(BaseObserver, feature=FEATURE):
    def __init__(self, recorder: Recorder, engine: DeviceEngine | None = None) -> None:
        self.state = HuntState(recorder)
        self.recorder = recorder
        # CUDA autocast stood in on this CPU: values checked as a GPU would hold them.
        self.gpu = GpuFloat16(engine) if engine is not None and engine.cpu else None

    @property
    def active(self) -> bool:
        return self.state.active

    # The DataLoader limit sets it while a batch is fetched (recorder.NonfiniteWatch).
    @property
    def fetching(self) -> bool:
        return self.state.fetching

    @fetching.setter
    def fetching(self, value: bool) -> None:
        self.state.fetching = value

    def install(self, patcher: Patcher) -> None:
        state = self.state
        state.modules.install(patcher)
        pre = register_optimizer_step_pre_hook(self._before_optimizer_step)
        post = register_optimizer_step_post_hook(self._after_optimizer_step)
        patcher.on_undo(pre.remove)
        patcher.on_undo(post.remove)

        gpu = self.gpu

        def after_op(
            func: Callable[..., Any],
            name: str,
            args: tuple[Any, ...],
            kwargs: dict[str, Any],
            out: Any,
        ) -> Any:
            why = None
            if gpu is not None:
                out, why = gpu.after_op(func, name, args, kwargs, out)
            forward.after_op(state, func, name, args, kwargs, out, why)
            return out

        mode = HuntMode(state, after_op)
        mode.__enter__()  # type: ignore[no-untyped-call]
        patcher.on_undo(lambda: self._leave(mode))

    def _leave(self, mode: HuntMode) -> None:
        self.state.active = False
        try:
            mode.__exit__(None, None, None)  # type: ignore[no-untyped-call]
        except Exception:  # the script left its own modes open: ours stays, inactive
            log.info("the NaN hunt's mode could not be left", exc_info=True)

    def on_train_step(self, step: int, step_time_s: float) -> None:
        self.state.step_ended()

    # --- data, and the places where a value counts (data.py, sinks.py) -------------------

    def watch_loader(self, iterator: Iterator[Any]) -> None:
        data.watch_loader(self.state, iterator)

    def batch_taken(self, loader: LoaderStats, batch: Any) -> None:
        self.state.batches_taken += 1
        if self.state.active:
            data.check_batch(self.state, loader, batch)

    def before_backward(self, loss: Any) -> None:
        if self.state.active:
            self._at_sink("the loss", sinks.check_loss, loss)

    def _before_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.state.in_optimizer = True
        if self.state.active:
            self._at_sink("the gradients", sinks.check_gradients, optimizer)

    def _after_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.state.in_optimizer = False
        if self.state.active:
            self._at_sink("the parameters", sinks.check_parameters, optimizer)

    def _at_sink(self, what: str, check: Any, value: Any) -> None:
        """A place where a value counts, checked; a failure of the check is the hunt's own
        (NonFiniteFound, a BaseException, passes: it ends the job at the origin)."""
        try:
            check(self.state, value)
        except Exception:
            frame = user_frame(sys._getframe(1))
            self.state.failures.failed(
                what,
                frame.f_code.co_filename if frame else None,
                frame.f_lineno if frame else None,
            )
