"""``memory_forecast`` in result.json: the GPU memory one training step would need.

Torch-free, like the rest of ``rundir``: the language server reads it for the lens and
the result page. Sizes are bytes; a GB is 2**30 bytes (see ``forecast/devices.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

GB = 1 << 30


def format_gb(size: float) -> str:
    """``11.2 GB``; whole sizes without a fraction (``24 GB``)."""
    gb = size / GB
    return f"{gb:.0f} GB" if abs(gb - round(gb)) < 0.05 and gb >= 1 else f"{gb:.1f} GB"


def format_size(size: float) -> str:
    """``11.2 GB`` from one GB up, ``180 MB``, ``0.4 MB`` below (MB: 2**20 bytes)."""
    if size >= GB:
        return format_gb(size)
    mb = size / (1 << 20)
    return f"{mb:.0f} MB" if mb >= 10 else f"{mb:.1f} MB"


@dataclass
class ModuleMemory:
    """One top-level module of the model: what it holds, and the step's total at its own
    peak (forward or backward)."""

    name: str
    parameters: int = 0
    gradients: int = 0
    optimizer_state: int = 0
    activations: int = 0
    peak: int = 0


@dataclass
class DeviceFit:
    device: str  # "24 GB", "h100 (80 GB)", "cuda:0 (79.1 GB)"
    capacity: int
    fits: bool
    # When it does not fit: the largest batch size that does (the same replay), if any.
    max_batch_size: int | None = None


@dataclass
class RemedyForecast:
    """A change to the step, replayed with it: what the step would need then."""

    remedy: str  # what to change, and the code that does it
    batch_size: int | None  # the batch size it was replayed at (the step's own)
    peak: int  # bytes at the peak, workspace included
    device: str  # the device it was judged against: the first the step does not fit
    fits: bool


@dataclass
class MemoryForecast:
    # None when no forecast could be made; ``error`` then says why in one line.
    peak: int | None = None  # bytes the allocator counts at the step's peak, workspace included
    reserved: int | None = None  # segments the caching allocator would hold then
    workspace: int = 0  # the cuBLAS workspace, part of ``peak``
    # Bytes at the peak per category: parameters, gradients, optimizer_state, activations,
    # temporaries (named in forecast/tracker.py).
    categories: dict[str, int] = field(default_factory=dict)
    # Where the peak is: "forward" | "loss" | "backward" | "optimizer step", and the
    # innermost module running then (relative to the model), if any.
    peak_phase: str | None = None
    peak_module: str | None = None
    modules: list[ModuleMemory] = field(default_factory=list)
    batch_size: int | None = None  # the step's batch size as observed
    precision: str = ""  # "float32", "autocast bfloat16", "bfloat16 weights, autocast …"
    optimizer: str | None = None  # the optimizer's class
    fits: list[DeviceFit] = field(default_factory=list)
    # Where a device does not fit: each remedy replayed, and the line that advises those
    # whose replay fits (nothing is advised that was not replayed).
    remedies: list[RemedyForecast] = field(default_factory=list)
    advice: str | None = None
    # How the loss was replayed: the script's own calls, or a stand-in and why.
    loss: str = ""
    not_counted: str = ""
    duration_s: float = 0.0
    error: str | None = None

    def headline(self) -> str:
        """``≈ 11.2 GB peak · fits 24 GB``: the terminal's and the code lens's one line."""
        if self.peak is None:
            return f"no memory forecast: {self.error}"
        line = f"≈ {format_size(self.peak)} peak"
        fitting = [f for f in self.fits if f.fits]
        if fitting:
            return f"{line} · fits {min(fitting, key=lambda f: f.capacity).device}"
        if self.fits:
            return f"{line} · fits none of {', '.join(f.device for f in self.fits)}"
        return line

    def breakdown(self) -> str:
        """``at the peak: parameters 474 MB, gradients 0.0 MB (474 MB once backward made
        them), …``: the categories at the step's peak. A peak early in backward holds few
        gradients (made as backward frees activations): their full size is said beside."""
        parts = []
        for name, size in self.categories.items():
            part = f"{name.replace('_', ' ')} {format_size(size)}"
            every = sum(m.gradients for m in self.modules)
            if name == "gradients" and every > size:
                part += f" ({format_size(every)} once backward made them)"
            parts.append(part)
        return "at the peak: " + ", ".join(parts)

    def where(self) -> str:
        """``backward, in transformer.h.3``"""
        phase = self.peak_phase or ""
        return f"{phase}, in {self.peak_module}" if self.peak_module else phase

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryForecast:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["modules"] = [ModuleMemory(**m) for m in values.get("modules") or []]
        values["fits"] = [DeviceFit(**f) for f in values.get("fits") or []]
        values["remedies"] = [RemedyForecast(**r) for r in values.get("remedies") or []]
        return cls(**values)
