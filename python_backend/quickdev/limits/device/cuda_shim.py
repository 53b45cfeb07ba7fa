"""``torch.cuda`` as a GPU script wants it answered in a CPU-only job.

The calls a GPU script makes (``set_device``, memory statistics, streams,
``synchronize``, GradScaler) answer as an idle device would instead of failing in a build
without CUDA; ``availability`` answers whether there is one; autocast is ``autocast.py``'s.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import torch

from quickdev.limits.device.engine import DeviceEngine
from quickdev.limits.patching import Patcher


class _Event:
    """A CUDA event timed by the host clock (``elapsed_time`` in milliseconds)."""

    def __init__(self, enable_timing: bool = False, *args: Any, **kwargs: Any) -> None:
        self.at: float | None = None

    def record(self, stream: Any = None) -> None:
        self.at = time.perf_counter()

    def elapsed_time(self, end: _Event) -> float:
        return ((end.at or 0.0) - (self.at or 0.0)) * 1000.0

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Any = None) -> None:
        pass


class _Stream:
    """A stream on which everything has already happened: the CPU runs in order."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = torch.device("cpu")
        self.priority = priority

    def wait_stream(self, stream: Any) -> None:
        pass

    def wait_event(self, event: Any) -> None:
        pass

    def record_event(self, event: _Event | None = None) -> _Event:
        event = event or _Event()
        event.record()
        return event

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


@contextlib.contextmanager
def _null_context(*args: Any, **kwargs: Any) -> Iterator[None]:
    yield


def _properties(device: Any = None) -> Any:
    pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    return SimpleNamespace(
        name="cpu (quickdev stands in for CUDA)",
        total_memory=pages * page_size,
        major=0,
        minor=0,
        multi_processor_count=os.cpu_count() or 1,
        is_integrated=True,
    )


def _functions(engine: DeviceEngine) -> dict[str, Any]:
    def set_device(device: Any) -> None:
        engine.count("torch.cuda.set_device")

    def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    def zero(*args: Any, **kwargs: Any) -> int:
        return 0

    return {
        "set_device": set_device,
        "current_device": zero,
        "get_device_name": lambda device=None: _properties().name,
        "get_device_properties": _properties,
        "get_device_capability": lambda device=None: (0, 0),
        "is_bf16_supported": lambda including_emulation=True: True,
        "synchronize": nothing,
        "init": nothing,
        "initial_seed": lambda: torch.initial_seed(),
        "memory_summary": lambda device=None, abbreviated=False: "",
        "empty_cache": nothing,
        "ipc_collect": nothing,
        "memory_allocated": zero,
        "memory_reserved": zero,
        "max_memory_allocated": zero,
        "max_memory_reserved": zero,
        "reset_peak_memory_stats": nothing,
        "reset_max_memory_allocated": nothing,
        "reset_accumulated_memory_stats": nothing,
        "memory_stats": lambda device=None: {},
        "mem_get_info": lambda device=None: (_properties().total_memory,) * 2,
        "get_rng_state": lambda device="cuda": torch.get_rng_state(),
        "get_rng_state_all": lambda: [torch.get_rng_state()],
        "set_rng_state": nothing,
        "set_rng_state_all": nothing,
        "Stream": _Stream,
        "Event": _Event,
        "stream": _null_context,
        "device": _null_context,
        "current_stream": lambda device=None: _Stream(),
        "default_stream": lambda device=None: _Stream(),
    }


def _defining_module(name: str) -> Any:
    """The submodule of torch.cuda that defines ``torch.cuda.<name>``, if another."""
    original = getattr(torch.cuda, name, None)
    module = sys.modules.get(getattr(original, "__module__", None) or "")
    if module is None or module is torch.cuda or getattr(module, name, None) is not original:
        return None
    return module


def _own(fn: Any) -> Any:
    """A function object of its own per name: torch._dynamo's trace rules reject one
    object found under two torch.cuda names."""

    def stand_in(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return stand_in


def install(patcher: Patcher, engine: DeviceEngine) -> None:
    for name, value in _functions(engine).items():
        stand_in = value if isinstance(value, type) else _own(value)
        # Also where torch defines it: libraries call torch.cuda.random.get_rng_state
        # (Hugging Face's checkpoints) and torch.cuda.memory.memory_allocated.
        for owner in (torch.cuda, _defining_module(name)):
            if owner is not None:
                patcher.set(owner, name, stand_in)
    _install_grad_scaler(patcher, engine)


def _install_grad_scaler(patcher: Patcher, engine: DeviceEngine) -> None:
    """The scaler runs on the CPU (scale, unscale_, inf checks), so the script's own
    scaler calls are exercised rather than switched off."""
    scaler = torch.amp.GradScaler
    original_init = scaler.__init__

    def init(self: Any, device: str = "cuda", *args: Any, **kwargs: Any) -> None:
        if device == "cuda":
            engine.count("GradScaler cuda -> cpu")
            device = "cpu"
        original_init(self, device, *args, **kwargs)

    patcher.set(scaler, "__init__", init)
