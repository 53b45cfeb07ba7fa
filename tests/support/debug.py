"""Helpers the debugger and attach tests share."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

from quickdev.injection import injection_problem

from tests.support.dap import DapClient


def line_of(path: Path, marker: str) -> int:
    """1-based number of the line holding ``marker``, so tests survive edits to the file."""
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if marker in text:
            return number
    raise AssertionError(f"{marker!r} not in {path}")


# What the extension asks of every quickdev session's debugpy (extension/debug/configuration.ts
# SESSION_OPTIONS), read from the file the extension bundles.
SESSION_RULES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[2] / "extension" / "debug" / "sessionRules.json").read_text()
)
SESSION_OPTIONS: dict[str, Any] = {"redirectOutput": True, "rules": SESSION_RULES}


def quickdev_env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


# A job that runs until its stop file appears: long enough to attach to, twice.
LONG_JOB = textwrap.dedent(
    """
    import sys
    import time
    from pathlib import Path

    import torch

    stop = Path(sys.argv[1])
    weights = torch.zeros(4)
    step = 0
    while not stop.exists():
        step += 1
        weights += 1.0  # BREAK
        time.sleep(0.01)
    """
)


def read_variable_at(address: dict[str, Any], script: Path, line: int, name: str) -> int:
    """Attach as the editor does (justMyCode off), stop at ``line``, read ``name``, then
    detach and let the debuggee run on."""
    with DapClient.connect(str(address["host"]), int(str(address["port"]))) as dap:
        dap.initialize()
        dap.attach(just_my_code=False)
        dap.set_breakpoints(script, [line])
        dap.configuration_done()
        stopped = dap.wait_for_stopped()
        frame = dap.stack_trace(stopped["threadId"])[0]
        assert frame["line"] == line
        value = int(dap.locals(frame["id"])[name]["value"])
        dap.set_breakpoints(script, [])
        dap.continue_(stopped["threadId"])
        dap.disconnect()
    return value


def host_injection_problem() -> str | None:
    """Whether this host lets gdb run code in a traced process, asked as quickdev asks it."""
    gdb = shutil.which("gdb")
    assert gdb is not None, "attach tests need gdb ('make system-deps')"
    return injection_problem(gdb)


def assert_injection_refused(answer: Any, target: subprocess.Popen[Any]) -> None:
    """``quickdev attach --pid`` refused in one line naming the cause and the alternative."""
    assert answer.returncode == 1, answer.stdout
    lines = answer.stderr.strip().splitlines()
    assert len(lines) == 1, answer.stderr
    assert_injection_refusal_text(lines[0])
    assert target.poll() is None, "a refused attach must leave the target running"


def assert_injection_refusal_text(text: str) -> None:
    assert "gdb cannot run code in a traced process" in text, text
    assert "quickdev run" in text and "SIGUSR1" in text, text
    assert "\n" not in text
