"""The file interposer (``interpose.c``): built once per machine, preloaded into every process of
a job, and pointed at the job's journal process (``service``).

Shipped as C source (``pip install``, ``make vsix`` and CI need no compiler to install):
the first job on a machine builds it with the system's C compiler (``cc``, or ``CC``) into
the user's cache, under the hash of its source and the machine's architecture, in a
fraction of a second; later jobs reuse it. Where it cannot be (no compiler, a system other
than Linux, a cache path the dynamic loader cannot take), jobs keep the Python-level journal
(``hook``, ``registry``, ``children``), the end-of-job check names what else changed, and
the result says which writers were followed and why (``Status``).

A process gets the library at its start only: ``preload`` re-executes ``quickdev run`` once
with LD_PRELOAD set, before anything is imported, opened or written (the process id, and
so what the editor knows of the job, stays the same). The warm process does the same when
it starts, so the jobs it forks have the library, dormant until their journal activates it.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quickdev.cachedir import quickdev_cache_dir

SOURCE = Path(__file__).with_name("interpose.c")
LIBRARY = "libquickdev-journal.so"
OFF_ENV = "QUICKDEV_NO_INTERPOSER"  # "1": the Python-level journal only (and no re-exec)
TRIED_ENV = "QUICKDEV_INTERPOSER"  # set on the re-exec: it is tried once, never in a loop
SOCKET_ENV = "QUICKDEV_JOURNAL_SOCKET"  # read by interpose.c at a process's start
SCOPE_ENV = "QUICKDEV_JOURNAL_SCOPE"


@dataclass(frozen=True)
class Built:
    library: Path | None
    why_not: str = ""  # where there is none: why, in words for the result


def build() -> Built:
    """The library for this machine: found in the cache, or built there now."""
    if not sys.platform.startswith("linux"):
        return Built(None, "the interposer is built for Linux only")
    source = SOURCE.read_bytes()
    key = hashlib.sha256(source + os.uname().machine.encode()).hexdigest()[:16]
    folder = quickdev_cache_dir("interposer", key)
    library = folder / LIBRARY
    if library.exists():
        return _usable(library)
    failed = folder / "build-failed.txt"
    if failed.exists():
        return Built(None, failed.read_text(encoding="utf-8").strip())
    compiler = (
        shlex.split(os.environ.get("CC", ""))
        or [found for found in (shutil.which(name) for name in ("cc", "gcc", "clang")) if found][:1]
    )
    if not compiler:  # nothing kept: a compiler installed later is used
        return Built(None, "no C compiler (cc) to build quickdev's file interposer")
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{LIBRARY}.{os.getpid()}"
    command = [*compiler, "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-o", str(partial),
               str(SOURCE), "-ldl"]  # fmt: skip
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        return Built(None, f"{compiler[0]} could not build quickdev's file interposer ({exc})")
    if proc.returncode != 0:
        detail = next((line for line in proc.stderr.splitlines() if "error" in line), "")
        why = f"{compiler[0]} could not build quickdev's file interposer: {detail}".strip()
        failed.write_text(why + "\n", encoding="utf-8")
        return Built(None, why)
    os.replace(partial, library)
    return _usable(library)


def _usable(library: Path) -> Built:
    if any(c in str(library) for c in " :\t"):  # LD_PRELOAD splits on these
        return Built(None, f"the cache path {library.parent} has a space or a colon, which "
                           f"LD_PRELOAD cannot take")  # fmt: skip
    return Built(library)


def preload() -> None:
    """Re-execute this process (a job, the warm process) with the interposer preloaded,
    once, where it can be; otherwise go on as it is. Before anything is imported or made."""
    if loaded() or os.environ.get(OFF_ENV) == "1" or TRIED_ENV in os.environ:
        return
    if sys.gettrace() is not None or "debugpy" in sys.modules or "pydevd" in sys.modules:
        return  # a debugger follows this process: an exec would lose it
    built = build()
    if built.library is None:
        return
    env = dict(os.environ)
    env["LD_PRELOAD"] = ":".join(filter(None, [str(built.library), env.get("LD_PRELOAD")]))
    env[TRIED_ENV] = str(built.library)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        os.execve(sys.executable, sys.orig_argv, env)
    except OSError:
        return  # this process goes on without it


def library() -> ctypes.CDLL | None:
    """The interposer in this process, if it was preloaded."""
    try:
        process = ctypes.CDLL(None)
        process.quickdev_journal_activate  # noqa: B018 (a lookup: absent without it)
    except (OSError, AttributeError):
        return None
    return process


def loaded() -> bool:
    return sys.platform.startswith("linux") and library() is not None


def pause(on: int) -> None:
    """This thread's file calls pass the interposer unasked while ``on``."""
    global _pause_function
    if _pause_function is None:
        process = library()
        if process is None:
            return
        _pause_function = process.quickdev_journal_pause
    _pause_function(on)


_pause_function: Any = None


@dataclass(frozen=True)
class Status:
    """Which writers the journal follows in this job, in words for the result."""

    interposed: bool
    writers: str

    @classmethod
    def now(cls) -> Status:
        if loaded():
            return cls(True, "every process of the job, through the C library's file calls")
        if os.environ.get(OFF_ENV) == "1":
            why = f"the interposer is switched off ({OFF_ENV}=1)"
        elif sys.gettrace() is not None or "debugpy" in sys.modules:
            why = "the job started under a debugger, which an interposed restart would lose"
        else:
            built = build()
            why = built.why_not or "this process did not start with the interposer"
        return cls(False, f"Python code and the native writers quickdev knows ({why})")
