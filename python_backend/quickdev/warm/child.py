"""In a forked job: become what ``python -m quickdev run ...`` would have started.

Own session and process group (the server's cancel signals the group), the stdio the
server gave, the interpreter's startup signal handlers and an empty signal mask, the
request's working directory, environment and argv. ``sys.path`` needs nothing: the warm
process was started with the job's environment, so its path is the job's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from quickdev.limits.journal.interposer import TRIED_ENV
from quickdev.options import WarmStart
from quickdev.processes import PACKAGE_DIR
from quickdev.warm.protocol import Fork

Handler = Callable[[int, Any], Any] | int | None


def signal_handlers() -> dict[signal.Signals, Handler]:
    handlers: dict[signal.Signals, Handler] = {}
    for sig in signal.valid_signals():
        if isinstance(sig, signal.Signals) and sig not in (signal.SIGKILL, signal.SIGSTOP):
            with contextlib.suppress(OSError, ValueError):
                handlers[sig] = signal.getsignal(sig)
    return handlers


def become_job(
    request: Fork,
    fds: list[int],
    startup: dict[signal.Signals, Handler],
    inherited: list[int],
    before: frozenset[str],
) -> WarmStart:
    """Returns what the job is told of its start: the warm process's PID and the modules
    it imported for the job (``before``: what it had before any preload)."""
    started = WarmStart(
        forked_from=os.getppid(),
        preloaded=tuple(name for name in list(sys.modules) if name not in before),
    )
    os.setsid()
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    for fd in [*fds, *inherited]:
        if fd > 2:
            with contextlib.suppress(OSError):
                os.close(fd)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    for sig, handler in startup.items():
        with contextlib.suppress(OSError, ValueError, TypeError):
            signal.signal(sig, handler)
    os.chdir(request.cwd)
    interposer = os.environ.get(TRIED_ENV)
    os.environ.clear()
    os.environ.update(request.env)
    if interposer is not None:
        # The warm process has tried the file interposer (and has it, where there is one):
        # the job must not restart for it, which would undo the warm start, and the
        # processes the job starts get the library too.
        os.environ[TRIED_ENV] = interposer
        preloads = os.environ.get("LD_PRELOAD", "").split(":")
        if interposer and interposer not in preloads:  # the server's request may name it
            os.environ["LD_PRELOAD"] = ":".join([interposer, *filter(None, preloads)])
    argv = [str(arg) for arg in request.argv]
    main = str(PACKAGE_DIR / "__main__.py")
    sys.argv = [main, *argv]
    sys.orig_argv = [sys.executable, "-m", "quickdev", *argv]
    _reseed()
    _restore_blas_threads()
    return started


def _reseed() -> None:
    """A cold job draws fresh entropy where libraries seed themselves at import (numpy's
    global generator); forked jobs would all share the warm process's draw."""
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        with contextlib.suppress(Exception):
            numpy_random.seed()


# The warm process runs OpenBLAS with one thread (its worker threads would make the fork
# unsafe to check); a job gets the count a cold start would: the variables', else one per CPU.
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"
_BLAS_SETTERS = (
    "openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
)


def _restore_blas_threads() -> None:
    if os.environ.get(BLAS_THREADS_ENV):
        return
    wanted = os.environ.get("GOTO_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
    count = int(wanted) if wanted and wanted.isdigit() else (os.cpu_count() or 1)
    import ctypes

    for library in _loaded_libraries("openblas"):
        with contextlib.suppress(OSError):
            handle = ctypes.CDLL(library)
            for name in _BLAS_SETTERS:
                setter = getattr(handle, name, None)
                if setter is not None:
                    setter(ctypes.c_int(count))
                    break


def _loaded_libraries(word: str) -> list[str]:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = [line.split()[-1] for line in maps if word in line and ".so" in line]
    except OSError:
        return []
    return list(dict.fromkeys(paths))
