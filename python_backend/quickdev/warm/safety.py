"""When forking this process is safe: one thread (Python's count and the kernel's),
CUDA not initialized, no debugger loaded. Checked after each preload and before each fork."""

from __future__ import annotations

import os
import sys
import threading

UNSAFE_MODULES = ("debugpy", "pydevd")


def fork_supported() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "fork") and hasattr(os, "pidfd_open")


def problem() -> str | None:
    """Why a fork now would not give a clean job, or None."""
    if threading.active_count() != 1:
        return f"started a Python thread ({threading.active_count()} running)"
    tasks = _kernel_threads()
    if tasks is not None and tasks != 1:
        return f"started a native thread ({tasks} running)"
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_initialized():
        return "initialized CUDA"
    for name in UNSAFE_MODULES:
        if name in sys.modules:
            return f"loaded {name}"
    return None


def _kernel_threads() -> int | None:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None
