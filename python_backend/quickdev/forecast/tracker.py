"""torch's MemTracker, told what the CUDA allocator would count and where the peak is.

MemTracker attributes every storage to a category (parameters, gradients, optimizer
state, activations, temporaries) and to the modules running. Two additions: each
allocation and free is replayed on the caching allocator's rules (``allocator.py``),
also when the fake tensors live on the CPU stand-in; and the step's phase and innermost
module are noted whenever the peak grows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch.distributed._tools.mem_tracker import (
    _TOTAL_KEY,
    MemTracker,
    _MemRefType,
    _ModState,
    _UpdateType,
)

from quickdev.forecast.allocator import CachingAllocator, block_size

# MemTracker's categories -> the forecast's.
CATEGORIES = {
    _MemRefType.PARAM: "parameters",
    _MemRefType.BUFFER: "parameters",
    _MemRefType.GRAD: "gradients",
    _MemRefType.OPT: "optimizer_state",
    _MemRefType.ACT: "activations",
    _MemRefType.OTH: "activations",  # the batch, tracked as an external
    _MemRefType.TEMP: "temporaries",
}


@dataclass
class PeakAt:
    phase: str  # forward | loss | backward | optimizer step
    module: str | None  # the innermost module running, relative to the model


class StepTracker(MemTracker):  # type: ignore[no-untyped-call]
    def __init__(self, root_name: str) -> None:
        super().__init__()
        self.allocator = CachingAllocator()
        # Set by the replay as it moves through the step; backward is read from torch.
        self.phase = "forward"
        self.peak_at = PeakAt("forward", None)
        self._root = root_name
        self._by_name: dict[str, Any] = {}

    def _update_snap(
        self,
        u_type: _UpdateType,
        winfo: Any,
        old_mem_consumed: int | None = None,
        old_reftype: Any = None,
    ) -> None:
        # Count blocks as the CUDA allocator does, whatever device the fake tensors say.
        if u_type in (_UpdateType.ADD, _UpdateType.SIZE):
            winfo.mem_consumed = block_size(winfo.size * winfo.element_size)
            if u_type == _UpdateType.SIZE:
                self.allocator.free(id(winfo))
            self.allocator.malloc(id(winfo), winfo.mem_consumed)
        elif u_type == _UpdateType.DEL:
            self.allocator.free(id(winfo))
        super()._update_snap(u_type, winfo, old_mem_consumed, old_reftype)

    def _pre_fw_hook(self, module: Any, inputs: Any) -> None:
        # The model's forward again before backward (two inputs through one model):
        # MemTracker refuses a second call of the root; here it is one more forward.
        name = self._mod_tracker.get_known_fqn(module)  # type: ignore[no-untyped-call]
        again = module in self.memory_tracking and not self._mod_tracker.is_bw
        if not again or set(self._mod_tracker.parents) - {name} != {"Global"}:
            super()._pre_fw_hook(module, inputs)
            return
        stats = self.memory_tracking[module]
        stats.input_mem = self._track_inputs_or_outputs(inputs)
        snapshot = self.get_tracker_snapshot()
        stats.local_peak = {dev: s[_TOTAL_KEY] for dev, s in snapshot.items()}
        stats.snapshots.setdefault(_ModState.PEAK_FW, []).append(snapshot)
        stats.snapshots.setdefault(_ModState.PRE_FW, []).append(self.get_tracker_snapshot())

    def track_gradients(self, tensor: Any) -> None:
        """A tensor made outside the step that holds gradients (DDP's buckets)."""
        self._update_and_maybe_create_winfos(tensor, _MemRefType.GRAD)

    def _track(self, reftype: Any, t: Any) -> None:
        # The optimizer's state exists before the measured step (a warm-up step made it):
        # what its step allocates is scratch, not state. State it adds is re-labelled by
        # MemTracker's own post-step hook.
        super()._track(_MemRefType.TEMP if reftype == _MemRefType.OPT else reftype, t)

    def _update_peak_stats(self, peak_state: Any) -> None:
        # MemTracker's own walks every module tracked after every op (hundreds in a large
        # model, each through a weak reference); only the running ones can peak.
        current = self._curr_mem_snap
        if len(self._by_name) != len(self.memory_tracking):
            modules = self.memory_tracking.values()  # type: ignore[no-untyped-call]
            self._by_name = {s.mod_fqn: s for s in modules}
        for name in self._mod_tracker.parents:
            stats = self._by_name.get(name)
            if stats is None or peak_state not in stats.snapshots:
                continue
            for dev, snapshot in current.items():
                if stats.local_peak.get(dev, 0) < snapshot[_TOTAL_KEY]:
                    stats.local_peak[dev] = snapshot[_TOTAL_KEY]
                    stats.snapshots[peak_state][-1][dev] = dict(snapshot)
        for dev, snapshot in current.items():
            if self._peak_mem.get(dev, 0) < snapshot[_TOTAL_KEY]:
                self._peak_mem[dev] = snapshot[_TOTAL_KEY]
                self._peak_mem_snap[dev] = dict(snapshot)
                self.peak_at = self._where()

    def _where(self) -> PeakAt:
        if self._in_opt:
            return PeakAt("optimizer step", None)
        running = [name for name in self._mod_tracker.parents if name != "Global"]
        innermost = max(running, key=lambda n: n.count("."), default=None)
        module = None
        if innermost is not None and innermost != self._root:
            module = innermost.removeprefix(self._root + ".")
        phase = "backward" if self._mod_tracker.is_bw else self.phase
        return PeakAt(phase, module)

    def peak_categories(self) -> dict[str, int]:
        """Bytes per category at the step's peak (one device: the step's)."""
        totals = dict.fromkeys(dict.fromkeys(CATEGORIES.values()), 0)
        for snapshot in self.get_tracker_snapshot("peak").values():
            for kind, size in snapshot.items():
                if isinstance(kind, _MemRefType):
                    totals[CATEGORIES[kind]] += size
        return totals
