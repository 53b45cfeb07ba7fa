"""Under the CUDA stand-in, the script is told it has one CUDA device.

A script written for a GPU insists on one before it starts: ``assert
torch.cuda.is_available()`` (timm), ``device_count() >= 1``, cuDNN present, a
framework's own check (Lightning's ``CUDAAccelerator.is_available()``, accelerate's and
Hugging Face's ``is_*cuda_available()``, which all end here). Answered as this CPU
machine would, it fails before anything is stood in for. So the availability queries
answer as a machine with one CUDA device would, and every device idiom that follows
(``.cuda()``, ``"cuda"`` strings, pinned memory, autocast, GradScaler, NCCL,
``torch.load`` of the checkpoints it saved) lands on the CPU through the engine.

A script that only prefers CUDA (``"cuda" if torch.cuda.is_available() else "cpu"``)
then takes its CUDA path too, which is the path its real run takes on the GPU machine.

Who asks decides the answer. torch's own code, and Quickdev's, get a CPU-only job's
answer (no CUDA): torch goes on from its own check to its CUDA internals
(``DataParallel``'s device list, the default process-group backends, ``fork_rng``),
which the stand-in does not reach, and which on the CPU path do what the script's CUDA
path needs.

result.json counts the answers (``device.answered``), but not those to a library's
checks at import: a warm start imported the libraries before the job, in a process
that answered as this machine does, so only a cold job would count them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch

from quickdev.frameworks import FRAMEWORKS
from quickdev.limits.device.engine import DeviceEngine
from quickdev.limits.patching import Patcher

# Packages whose questions get the machine's own answer (see above).
_ANSWERED_TRUTHFULLY = frozenset({"torch", "quickdev"})
# Frameworks that keep their answer once asked (functools caches): forgotten when the
# stand-in starts and when it ends, so neither side sees the other's answer.
_CACHED_CHECKS = tuple(check for f in FRAMEWORKS for check in f.cached_cuda_checks)


def _asked_by_script(frame: FrameType | None) -> bool:
    name = frame.f_globals.get("__name__", "") if frame is not None else ""
    return str(name).partition(".")[0] not in _ANSWERED_TRUTHFULLY


def _importing(frame: FrameType | None) -> bool:
    """Whether a module is being imported: a library's import-time check, which a warm
    start made before the job (``quickdev.warm``), so it is answered but not counted."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _query(engine: DeviceEngine, name: str, stood_in: Any, cpu_answer: Any) -> Any:
    def query(*args: Any, **kwargs: Any) -> Any:
        asker = sys._getframe(1)
        if not _asked_by_script(asker):
            return cpu_answer
        if not _importing(asker):
            engine.answered[name] += 1
        return stood_in

    query.__name__ = query.__qualname__ = name.rpartition(".")[2]
    return query


def install(patcher: Patcher, engine: DeviceEngine) -> None:
    # (owner, attribute, the script's answer, the answer of a CPU-only job: also on a
    # GPU machine under --device cpu, where torch's own code must not reach the GPU)
    queries: list[tuple[Any, str, Any, Any]] = [
        (torch.cuda, "is_available", True, False),
        (torch.cuda, "device_count", 1, 0),
        (torch.backends.cudnn, "is_available", True, False),
    ]
    if hasattr(torch, "accelerator"):
        queries += [
            (torch.accelerator, "is_available", True, False),
            (torch.accelerator, "device_count", 1, 0),
            (torch.accelerator, "current_accelerator", torch.device("cuda"), None),
        ]
    for owner, attribute, answer, cpu_answer in queries:
        name = f"{owner.__name__}.{attribute}"
        patcher.set(owner, attribute, _query(engine, name, answer, cpu_answer))
    _install_accelerator_calls(patcher, torch.device("cuda", 0))
    _forget_cached_checks()
    patcher.on_undo(_forget_cached_checks)


def _install_accelerator_calls(patcher: Patcher, device: torch.device) -> None:
    """``torch.accelerator``'s device calls, as ``torch.cuda``'s stand-in answers them,
    for a script told that its accelerator is CUDA."""
    if not hasattr(torch, "accelerator"):
        return
    calls: dict[str, Callable[..., Any]] = {
        "current_device_index": lambda: device.index,
        "current_device_idx": lambda: device.index,
        "set_device_index": lambda index: None,
        "set_device_idx": lambda index: None,
        "synchronize": lambda device=None: None,
        "empty_cache": lambda: None,
        "memory_allocated": lambda device=None: 0,
        "max_memory_allocated": lambda device=None: 0,
        "memory_reserved": lambda device=None: 0,
        "max_memory_reserved": lambda device=None: 0,
        "memory_stats": lambda device=None: {},
        "reset_peak_memory_stats": lambda device=None: None,
        "reset_accumulated_memory_stats": lambda device=None: None,
    }
    for name, call in calls.items():
        if hasattr(torch.accelerator, name):
            patcher.set(
                torch.accelerator, name, _unless_torch(call, getattr(torch.accelerator, name))
            )


def _unless_torch(stood_in: Callable[..., Any], real: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if _asked_by_script(sys._getframe(1)):
            return stood_in(*args, **kwargs)
        return real(*args, **kwargs)

    return call


def _forget_cached_checks() -> None:
    for module_name, attribute in _CACHED_CHECKS:
        check = getattr(sys.modules.get(module_name), attribute, None)
        if check is not None and hasattr(check, "cache_clear"):
            check.cache_clear()
