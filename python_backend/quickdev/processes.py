"""Whether a process still runs, for the job, the server and the TensorBoard manager alike."""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: object) -> bool:
    """True while ``pid`` runs; a zombie (ended, not yet reaped) counts as ended."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, but it exists
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc here: the signal check is all we have
