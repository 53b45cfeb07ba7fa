"""Seconds of work, as they would pass on this machine unloaded: the clock the step-cost
estimate and the evaluation loops' seconds share, so that the same script gets the same
answer on a busy machine (where its steps take longer than said) as on a quiet one."""

from __future__ import annotations

import os
import sys
import time


def cores(threads: int) -> float:
    """The cores a step on ``threads`` threads computes on (no more than the machine has)."""
    return float(min(threads, os.cpu_count() or 1))


def busy_seconds() -> float:
    """This process's CPU time over the cores torch computes on."""
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else 1
    return time.process_time() / cores(threads)
