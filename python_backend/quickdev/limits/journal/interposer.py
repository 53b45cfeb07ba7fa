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

import os
import sys
import zlib

from quickdev.cachedir import user_cache_folder

TYPE_CHECKING = False  # not typing's: see below
if TYPE_CHECKING:
    import ctypes
    from collections.abc import Mapping

# Light on purpose: imported by every job before it restarts with the library (``preload``),
# whose time is the job's: no pathlib, no hashlib; ctypes, subprocess and shutil are
# imported where they are used.

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "interpose.c")
LIBRARY = "libquickdev-journal.so"
OFF_ENV = "QUICKDEV_NO_INTERPOSER"  # "1": the Python-level journal only (and no re-exec)
# Set once a process has tried (the library's path, or empty where there is none): its
# children and the jobs a warm process forks never try again, and nothing loops.
TRIED_ENV = "QUICKDEV_INTERPOSER"
SOCKET_ENV = "QUICKDEV_JOURNAL_SOCKET"  # read by interpose.c at a process's start
SCOPE_ENV = "QUICKDEV_JOURNAL_SCOPE"
INTERPOSED = "every process of the job, through the C library's file calls"


class Built:
    def __init__(self, library: str | None, why_not: str = "") -> None:
        self.library = library
        self.why_not = why_not  # where there is none: why, in words for the result


def build() -> Built:
    """The library for this machine: found in the cache, or built there now."""
    if not sys.platform.startswith("linux"):
        return Built(None, "the interposer is built for Linux only")
    with open(SOURCE, "rb") as f:
        source = f.read()
    key = f"{zlib.crc32(source):08x}{len(source):x}-{os.uname().machine}"
    folder = os.path.join(user_cache_folder(), "quickdev", "interposer", key)
    library = os.path.join(folder, LIBRARY)
    if os.path.exists(library):
        return _usable(library)
    return _compile(folder, library)


def _compile(folder: str, library: str) -> Built:
    import shlex
    import shutil
    import subprocess

    compiler = (
        shlex.split(os.environ.get("CC", ""))
        or [found for found in (shutil.which(name) for name in ("cc", "gcc", "clang")) if found][:1]
    )
    if not compiler:  # nothing kept: a compiler installed later is used
        return Built(None, "no C compiler (cc) to build quickdev's file interposer")
    # A failure is kept for that compiler: not tried again at each job, but another one
    # (CC, a new one on PATH) is.
    failed = os.path.join(folder, f"build-failed-{zlib.crc32(' '.join(compiler).encode()):08x}")
    if os.path.exists(failed):
        with open(failed, encoding="utf-8") as f:
            return Built(None, f.read().strip())
    os.makedirs(folder, exist_ok=True)
    partial = os.path.join(folder, f".{LIBRARY}.{os.getpid()}")
    command = [*compiler, "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-o", partial,
               SOURCE, "-ldl"]  # fmt: skip
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        return Built(None, f"{compiler[0]} could not build quickdev's file interposer ({exc})")
    if proc.returncode != 0:
        detail = next((line for line in proc.stderr.splitlines() if "error" in line), "")
        why = f"{compiler[0]} could not build quickdev's file interposer: {detail}".strip()
        with open(failed, "w", encoding="utf-8") as f:
            f.write(why + "\n")
        return Built(None, why)
    os.replace(partial, library)
    return _usable(library)


def _usable(library: str) -> Built:
    if any(c in library for c in " :\t"):  # LD_PRELOAD splits on these
        return Built(None, f"the cache path {os.path.dirname(library)} has a space or a colon, "
                           f"which LD_PRELOAD cannot take")  # fmt: skip
    return Built(library)


def preload() -> None:
    """Re-execute this process (a job, the warm process) with the interposer preloaded,
    once, where it can be; otherwise go on as it is. Before anything is imported or made."""
    if sys.gettrace() is not None or "debugpy" in sys.modules or "pydevd" in sys.modules:
        return  # a debugger follows this process: an exec would lose it
    preloading = preloaded(os.environ)
    if not preloading:
        return  # tried already, or switched off
    os.environ[TRIED_ENV] = ""  # from here on, none of its processes tries again
    if not preloading[TRIED_ENV]:
        return
    env = {**os.environ, **preloading}
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        os.execve(sys.executable, sys.orig_argv, env)
    except OSError:
        return  # this process goes on without it


def preloaded(env: Mapping[str, str]) -> dict[str, str]:
    """The variables that give a process started with ``env`` the interposer from its start,
    and mark it tried (an empty path where there is none: it does not try again); none
    where it was tried already or is switched off. A job started so does not restart."""
    if TRIED_ENV in env or env.get(OFF_ENV) == "1":
        return {}
    built = build()
    if built.library is None:
        return {TRIED_ENV: ""}
    preloads = ":".join(filter(None, [built.library, env.get("LD_PRELOAD")]))
    return {"LD_PRELOAD": preloads, TRIED_ENV: built.library}


def library() -> ctypes.CDLL | None:
    """The interposer in this process, if it was preloaded."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        process = ctypes.CDLL(None)
        process.quickdev_journal_activate  # noqa: B018 (a lookup: absent without it)
    except (OSError, AttributeError):
        return None
    return process


def loaded() -> bool:
    return library() is not None


def pause(on: int) -> None:
    """This thread's file calls pass the interposer unasked while ``on``."""
    global _pause_function
    if _pause_function is None:
        process = library()
        if process is None:
            return
        _pause_function = process.quickdev_journal_pause
    _pause_function(on)


_pause_function: ctypes._FuncPointer | None = None


class Status:
    """Which writers the journal follows in this job, in words for the result."""

    def __init__(self, interposed: bool, writers: str) -> None:
        self.interposed = interposed
        self.writers = writers

    @classmethod
    def now(cls) -> Status:
        if loaded():
            return cls(True, INTERPOSED)
        if os.environ.get(OFF_ENV) == "1":
            why = f"the interposer is switched off ({OFF_ENV}=1)"
        elif sys.gettrace() is not None or "debugpy" in sys.modules:
            why = "the job started under a debugger, which an interposed restart would lose"
        else:
            built = build()
            why = built.why_not or "this process did not start with the interposer"
        return cls(False, f"Python code and the native writers quickdev knows ({why})")
