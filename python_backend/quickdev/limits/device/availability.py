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

How many devices: one, or under a launcher of N local processes (``--nproc N``, which
sets ``LOCAL_WORLD_SIZE``) N, one for each rank's ``set_device(local_rank)``. A script
that checks for more before it trains (``device_count() >= 2``, pytorch/examples'
minGPT-ddp; ``if device_count() < 2: exit``) is answered, in its own code, as a machine
with that many devices would answer (``DeviceCount``): every device index lands on the
CPU through the engine, and the result says which check was answered so. Libraries'
comparisons get the plain count: a library choosing its multi-GPU path is not safe.

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

import os
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch

from quickdev.frameworks import FRAMEWORKS
from quickdev.limits.device.engine import DeviceEngine
from quickdev.limits.patching import Patcher
from quickdev.limits.user_code import is_user_file

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


# A check for more devices than this is not a machine the job can stand in for.
MOST_DEVICES = 8


def stood_in_count() -> int:
    """CUDA devices the script is told it has: one per local rank of its launcher."""
    try:
        return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        return 1


class DeviceCount(int):
    """``device_count()``'s answer to the script. As a number it is the stood-in count;
    compared in the script's own code with a number of devices it needs (``>= k``,
    ``> k - 1``, ``< k``), it has them, up to ``MOST_DEVICES``, and the engine records
    the check (``DeviceEngine.needed``)."""

    engine: DeviceEngine

    def __new__(cls, count: int, engine: DeviceEngine) -> DeviceCount:
        answer = super().__new__(cls, count)
        answer.engine = engine
        return answer

    def _has(self, needed: object) -> bool:
        """Whether the check for ``needed`` devices is answered as a machine with them."""
        if not isinstance(needed, int) or isinstance(needed, bool) or needed <= int(self):
            return False
        asker = sys._getframe(2)
        if not is_user_file(asker.f_code.co_filename):
            return False
        where = f"{asker.f_code.co_filename}:{asker.f_lineno}"
        if needed > MOST_DEVICES:
            self.engine.declined[where] = needed  # said, so a script that exits says why
            return False
        self.engine.needed[where] = max(needed, self.engine.needed.get(where, 0))
        return True

    def __ge__(self, other: object) -> bool:
        return True if self._has(other) else int.__ge__(self, other)  # type: ignore[operator]

    def __gt__(self, other: object) -> bool:
        needed = other + 1 if isinstance(other, int) else other
        return True if self._has(needed) else int.__gt__(self, other)  # type: ignore[operator]

    def __lt__(self, other: object) -> bool:
        return False if self._has(other) else int.__lt__(self, other)  # type: ignore[operator]

    def __hash__(self) -> int:
        return int.__hash__(self)


def install(patcher: Patcher, engine: DeviceEngine) -> None:
    # (owner, attribute, the script's answer, the answer of a CPU-only job: also on a
    # GPU machine under --device cpu, where torch's own code must not reach the GPU)
    engine.cuda_devices = stood_in_count()
    count = DeviceCount(engine.cuda_devices, engine)
    queries: list[tuple[Any, str, Any, Any]] = [
        (torch.cuda, "is_available", True, False),
        (torch.cuda, "device_count", count, 0),
        (torch.backends.cudnn, "is_available", True, False),
    ]
    if hasattr(torch, "accelerator"):
        queries += [
            (torch.accelerator, "is_available", True, False),
            (torch.accelerator, "device_count", count, 0),
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
