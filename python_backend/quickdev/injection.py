"""Whether gdb can run code inside a traced process on this machine, probed harmlessly.

debugpy attaches to a PID by having gdb call functions in the target (``dlopen``, then
its own entry point). Some kernels (seen on a 6.18 kernel in a VM) let gdb attach and
read but not write the target's registers back ("Couldn't write extended state
status: Bad address"): the target then dies. So before injecting into a user's
process, gdb calls ``getpid()`` in a throwaway Python process of ours, the same kind
of call, and the answer is cached until the next boot (or another gdb).

Standard library only: the language server and ``quickdev attach`` use it.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

from quickdev.cache import user_cache_dir
from quickdev.rundir.jsonio import read_json_object, write_json

PROBE_TIMEOUT_S = 30.0
# A line of gdb's output that says the call did not go through.
_FAILURE = re.compile(r"couldn't|cannot|error|bad address|not permitted", re.IGNORECASE)


def injection_problem(gdb: str) -> str | None:
    """None when ``gdb`` can call a function in a traced process here; else the cause."""
    key = _cache_key(gdb)
    cache = _cache_file()
    cached = read_json_object(cache)
    if cached is not None and cached.get("key") == key:
        problem = cached.get("problem")
        return problem if isinstance(problem, str) else None
    problem = probe(gdb)
    try:
        cache.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_json(cache, {"key": key, "problem": problem})
    except OSError:
        pass  # no cache: the next attach probes again
    return problem


def probe(gdb: str) -> str | None:
    """Call ``getpid()`` through gdb in a throwaway process; the cause of failure, or None."""
    # The throwaway sleeps in a system call, as a training process usually is when
    # gdb stops it; its own stdout says it got there.
    target = subprocess.Popen(
        [sys.executable, "-I", "-c", "import time; print(flush=True); time.sleep(120)"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=os.path.dirname(sys.executable) or None,
        start_new_session=True,
    )
    try:
        assert target.stdout is not None
        target.stdout.readline()
        command = [gdb, "-nx", "-nh", "--batch", "-p", str(target.pid)]
        command += ["-ex", "set confirm off", "-ex", "call (int)getpid()"]
        try:
            done = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return f"gdb took over {PROBE_TIMEOUT_S:.0f}s to call a function in a test process"
        except OSError as exc:
            return f"gdb cannot run ({exc.strerror or exc})"
        output = done.stdout + done.stderr
        survived = target.poll() is None
        if f"= {target.pid}" in output and survived and not _failure_line(output):
            return None
        cause = _failure_line(output) or (output.strip().splitlines() or ["no output"])[-1]
        return cause if survived else f"{cause}; the test process died"
    finally:
        target.kill()
        target.wait()


def _failure_line(output: str) -> str | None:
    for line in output.splitlines():
        line = line.strip()
        # gdb's notes about missing debug symbols and auto-load are not failures.
        if _FAILURE.search(line) and "debug" not in line.lower() and "auto-load" not in line:
            return line
    return None


def _cache_key(gdb: str) -> str:
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = "unknown"
    real = os.path.realpath(gdb)
    try:
        stamp = os.stat(real).st_mtime_ns
    except OSError:
        stamp = 0
    return hashlib.sha256(f"{boot}|{real}|{stamp}".encode()).hexdigest()[:32]


def _cache_file() -> Path:
    return user_cache_dir() / "gdb-injection.json"
