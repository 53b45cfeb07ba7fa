"""Helpers the debugger and attach tests share."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

from tests.support.dap import DapClient


def line_of(path: Path, marker: str) -> int:
    """1-based number of the line holding ``marker``, so tests survive edits to the file."""
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if marker in text:
            return number
    raise AssertionError(f"{marker!r} not in {path}")


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
