"""How a budget stops the script: ``StopJob``, raised where no loop of the user's can be ended.

``StopJob`` derives from BaseException so that a user's ``except Exception`` around the
training loop cannot swallow it. Its reason is the budget's name in the option table
(``rundir/option_table.py``), result.json's ``stop_reason``.
"""

from __future__ import annotations

# Not a budget: the NaN hunt found the first non-finite value (limits/nonfinite).
NONFINITE = "nonfinite"


class StopJob(BaseException):
    """A budget ran out; the job ends as ``stopped`` with this reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
