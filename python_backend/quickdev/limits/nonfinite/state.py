"""What the hunt's parts share: where the job is (phase and step), the origins of the
non-finite values in memory, the model's names, what is held for the debugger this step,
and the hunt's own failures. The parts that watch (``forward.py``, ``backward.py``,
``data.py``, ``float16.py``) and the places where a value counts (``sinks.py``) each take
this state; ``hunt.py`` puts them together.
"""

from __future__ import annotations

from typing import Any

import torch

from quickdev.limits.nonfinite.failures import Failures
from quickdev.limits.nonfinite.modules import Modules
from quickdev.limits.nonfinite.provenance import Origin, Provenance
from quickdev.limits.nonfinite.sites import ForwardSite
from quickdev.limits.profiler_marks import own_work_mark, recording
from quickdev.limits.recorder import Recorder

# Frames held for the debugger at most (an evaluation loop takes no training step).
MAX_HELD = 20_000
# Origins kept in order, for a value whose own origin is not on record (sinks.fallback).
MAX_RECENT = 100


class HuntState:
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.provenance = Provenance()
        self.modules = Modules()
        self.failures = Failures(lambda: self.step(self.phase()))
        # False once an origin is found, or the hunt is undone: nothing more is checked.
        self.active = True
        self.busy = False  # the hunt's own torch calls, outside the mode's handler
        self.fetching = False  # set by the DataLoader limit while a batch is fetched
        self.in_optimizer = False
        self.batches_taken = 0
        self.indices: Any = None  # what the loader asked its dataset for, last
        # What holds the user's frames (for the debugger), this training step's: a frame
        # keeps its locals alive, so they are let go when the step ends.
        self._held: list[Origin | ForwardSite] = []
        self.recent: list[Origin] = []
        # Origins (operation, line) whose non-finite values a later call made finite again.
        self.by_design: set[tuple[str, str | None, int | None]] = set()

    @property
    def following(self) -> bool:
        """Whether each operation is followed (the mode, the backward hooks): not once the
        hunt's own failures made it give that up (the places where a value counts are
        still checked)."""
        return self.active and not self.busy and self.failures.following

    def checking(self) -> _Checking:
        """The hunt's own torch calls from hooks: not seen by its mode (nor by any)."""
        return _Checking(self)

    # --- where the job is --------------------------------------------------------------

    def phase(self) -> str:
        if self.fetching:
            return "data"
        if self.in_optimizer:
            return "optimizer"
        if self.modules.running or len(self.modules.roots) or self.batches_taken:
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

    # --- what is held for the debugger ---------------------------------------------------

    def keep(self, origin: Origin) -> None:
        self.hold(origin)
        self.recent.append(origin)

    def hold(self, item: Origin | ForwardSite) -> None:
        self._held.append(item)
        if len(self._held) > MAX_HELD:
            self._release(self._held[: MAX_HELD // 2])
            del self._held[: MAX_HELD // 2]

    def step_ended(self) -> None:
        self.in_optimizer = False
        self._release(self._held)
        self._held = []
        del self.recent[: max(len(self.recent) - MAX_RECENT, 0)]
        self.provenance.prune()

    def _release(self, items: list[Origin | ForwardSite]) -> None:
        """Frames and tensors are let go; an origin that may still be reported keeps its
        statistics (one by design, a mask's, made again next step, keeps its shape)."""
        for item in items:
            if isinstance(item, ForwardSite):
                item.frame = None
                continue
            item.frames = None
            if item.site in self.by_design:
                item.let_go()
            else:
                item.settle()


class _Checking:
    """``own_work`` for the hunt's hooks, which run hundreds of times a step: a plain
    context manager (a generator-based one costs several microseconds a use)."""

    __slots__ = ("_disabled", "_mark", "_state")

    def __init__(self, state: HuntState) -> None:
        self._state = state

    def __enter__(self) -> None:
        self._state.busy = True
        self._disabled = torch._C.DisableTorchFunction()
        self._disabled.__enter__()
        self._mark = own_work_mark() if recording() else None
        if self._mark is not None:
            self._mark.__enter__()

    def __exit__(self, *exc: object) -> None:
        try:
            if self._mark is not None:
                self._mark.__exit__(None, None, None)
            self._disabled.__exit__(None, None, None)
        finally:
            self._state.busy = False
