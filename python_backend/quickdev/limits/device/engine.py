"""The device mapping: the device a script asks for -> the device this job has.

One function answers for every idiom (strings, integers, ``torch.device`` objects,
``map_location`` dicts); the idiom modules only find the device in their call and
count what they changed, so ``result.json`` can say what was remapped.
"""

from __future__ import annotations

import threading
from collections import Counter
from functools import lru_cache
from typing import Any

import torch

from quickdev.rundir.result import DeviceRemaps

# Device types a CPU job stands in for: tensors asked there live on the CPU instead.
_ACCELERATORS = frozenset({"cuda", "mps"})


# Taken before methods.py may stand a class in for torch.device.
_DEVICE = torch.device


class DeviceUnavailable(RuntimeError):
    """A call that needs a device this job cannot stand in for; its message is one line."""


def cuda_started() -> bool:
    """Whether CUDA has been initialized in this process (asking does not initialize it)."""
    return bool(torch.cuda.is_initialized())  # type: ignore[no-untyped-call]


def resolve_device(requested: str) -> str:
    """The device the job runs on, for ``--device auto|cpu|cuda|cuda:N``.

    ``auto`` is ``cuda`` where CUDA is present; a ``cuda:N`` the machine does not
    have is a usage error, found before the script runs.
    """
    if requested == "cpu" or (requested == "auto" and not torch.cuda.is_available()):
        return "cpu"
    if not torch.cuda.is_available():
        raise DeviceUnavailable(
            f"--device {requested}: this machine has no CUDA device; use --device cpu or auto"
        )
    if requested == "auto":
        # Before CUDA starts the current device is index 0; asking current_device() would
        # start CUDA (seconds, GPU memory) in a job that may never use it.
        current = torch.cuda.current_device() if cuda_started() else 0
        return f"cuda:{current}"
    index = torch.device(requested).index or 0
    if index >= torch.cuda.device_count():
        raise DeviceUnavailable(
            f"--device {requested}: this machine has {torch.cuda.device_count()} CUDA "
            f"device(s); use cuda:0..cuda:{torch.cuda.device_count() - 1}, auto or cpu"
        )
    return f"cuda:{index}"


@lru_cache(maxsize=256)
def _parse(text: str) -> torch.device:
    return _DEVICE(text)


class DeviceEngine:
    """Maps requested devices to the job's device and counts the remaps per idiom."""

    def __init__(self, requested: str, actual: str, cuda_count: int = 0) -> None:
        self.requested = requested
        self.actual = _DEVICE(actual)
        self.cpu = self.actual.type == "cpu"
        # --device cuda:N pins every CUDA request to N; auto keeps the indices the
        # machine has and moves only those it lacks (a cuda:3 checkpoint on one GPU).
        self._pinned = requested.startswith("cuda")
        self._cuda_count = cuda_count
        self.remaps: Counter[str] = Counter()
        # The CUDA autocast regions open on each thread, innermost last (autocast.py), as
        # the script asked them, whatever the CPU computes them in.
        self._cuda_regions = threading.local()
        # Availability queries the script asked, answered as a CUDA machine would.
        self.answered: Counter[str] = Counter()
        self.cuda_devices = 1  # how many CUDA devices the script is told it has
        # The script's checks for more devices, answered as a machine with them would:
        # "file:line" -> devices (availability.DeviceCount).
        self.needed: dict[str, int] = {}
        self.declined: dict[str, int] = {}  # checks for more than the stand-in gives
        # What each CUDA autocast dtype ran as on the CPU (autocast.py), for the result.
        self.autocast: list[dict[str, str]] = []

    def report(self) -> DeviceRemaps:
        return DeviceRemaps(
            requested=self.requested,
            actual=str(self.actual),
            remaps=dict(self.remaps),
            answered=dict(self.answered),
            autocast=list(self.autocast),
            cuda_devices=self.cuda_devices,
            needed=dict(self.needed),
            declined=dict(self.declined),
        )

    def enter_cuda_autocast(self, lowers_to: torch.dtype | None) -> None:
        """A CUDA autocast region opens; ``lowers_to``: the 16-bit dtype the script asked
        it to compute in, None for a region off (``enabled=False``) or in float32."""
        self._regions().append(lowers_to)

    def exit_cuda_autocast(self) -> None:
        regions = self._regions()
        if regions:
            regions.pop()

    def cuda_autocast(self) -> torch.dtype | None:
        """The dtype the innermost open CUDA autocast region of this thread asked for: what
        the script computes in on a GPU (the memory forecast replays that), though this CPU
        may compute it in another, or in float32 with autocast off."""
        regions = self._regions()
        return regions[-1] if regions else None

    def _regions(self) -> list[torch.dtype | None]:
        regions: list[torch.dtype | None] | None = getattr(self._cuda_regions, "stack", None)
        if regions is None:
            regions = self._cuda_regions.stack = []
        return regions

    def count(self, idiom: str) -> None:
        self.remaps[idiom] += 1

    def target(self, device: Any) -> torch.device | None:
        """The device to use instead of ``device``, or None to leave it as it is."""
        if isinstance(device, _DEVICE):
            parsed = device
        elif isinstance(device, str):
            try:
                parsed = _parse(device)
            except RuntimeError:
                return None  # not a device string (torch.load's "cpu" callables etc.)
        elif isinstance(device, int) and not isinstance(device, bool):
            # A bare index means an accelerator index in torch's own API.
            parsed = _DEVICE("cuda", device)
        else:
            return None
        kind = parsed.type
        if kind in ("cpu", "meta"):
            return None
        if kind not in _ACCELERATORS:
            self.unavailable(f"device {str(parsed)!r}")
        if self.cpu:
            return self.actual
        if kind != "cuda":
            self.unavailable(f"device {str(parsed)!r}")
        index = parsed.index
        if self._pinned:
            # "cuda" without an index is the current device, which the pin already is.
            current = index if index is not None else torch.cuda.current_device()
            return None if current == self.actual.index else self.actual
        if index is not None and index >= self._cuda_count:
            return self.actual
        return None

    def map(self, device: Any, idiom: str) -> Any:
        """``device`` mapped to this job's device, counted under ``idiom`` when it changed."""
        target = self.target(device)
        if target is None:
            return device
        self.remaps[idiom] += 1
        return target

    def unavailable(self, what: str) -> Any:
        """Fail the user's call with one line: what, and which --device to use (the
        job's error report adds where, from the traceback)."""
        advice = (
            "quickdev stands CUDA in for the CPU, not this; run with --device auto on a "
            "machine that has it"
            if self.cpu
            else f"quickdev maps CUDA devices to {self.actual}; use --device cpu or auto"
        )
        raise DeviceUnavailable(f"{what} cannot be mapped to {self.actual}: {advice}")
