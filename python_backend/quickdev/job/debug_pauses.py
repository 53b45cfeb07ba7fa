"""The time a debugger holds the script stopped (breakpoints, steps, pauses), so a debug
run's duration is the time its code ran, not the time a person read its variables.

pydevd, the debugger inside debugpy, parks every thread it stops in
``PyDB.do_wait_suspend`` until the editor lets it go; the job wraps that method and counts
the wall-clock time during which at least one thread is parked there. ``duration_s`` of
a debug run is its wall-clock time less that; result.json's ``paused_s`` says how much.
"""

from __future__ import annotations

import threading
import time
from typing import Any

_lock = threading.Lock()
_parked = 0
_since = 0.0
_paused_s = 0.0


def count_pauses(py_db: Any) -> bool:
    """Wrap ``py_db.do_wait_suspend``; False when pydevd has no such method."""
    original = getattr(py_db, "do_wait_suspend", None)
    if original is None or getattr(original, "_quickdev_counted", False):
        return original is not None

    def do_wait_suspend(*args: Any, **kwargs: Any) -> Any:
        _park(+1)
        try:
            return original(*args, **kwargs)
        finally:
            _park(-1)

    do_wait_suspend._quickdev_counted = True  # type: ignore[attr-defined]
    py_db.do_wait_suspend = do_wait_suspend
    return True


def _park(delta: int) -> None:
    global _parked, _since, _paused_s
    with _lock:
        now = time.perf_counter()
        if delta > 0 and _parked == 0:
            _since = now
        _parked += delta
        if delta < 0 and _parked == 0:
            _paused_s += now - _since


def paused_s() -> float:
    """Seconds the script was held stopped so far (a stop still going on counts)."""
    with _lock:
        ongoing = time.perf_counter() - _since if _parked else 0.0
        return _paused_s + ongoing
