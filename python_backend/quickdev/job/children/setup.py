"""What a process the script starts needs of the job to run as part of it, and the
variables that hand it over.

Kept light: ``spawned`` reads these names at the start of every Python the job starts,
and a child that is no worker must not pay for importing the options or the limits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from quickdev.limits.budget import Budget
    from quickdev.options import RunOptions

SETUP_ENV = "QUICKDEV_CHILD_JOB"  # the job's Setup, as JSON, for every child it starts
PARENT_ENV = "QUICKDEV_CHILD_PARENT"  # the pid of the process that starts the child


@dataclass(frozen=True)
class Setup:
    """What a child needs of the job to run as part of it, with the job's budgets as
    they are when the child starts (the script's ``--epochs 5`` allows 5 passes)."""

    run_dir: Path
    options: RunOptions
    script: str

    def to_json(self, budget: Budget) -> str:
        from quickdev.options import options_to_json

        return json.dumps(
            {
                "run_dir": str(self.run_dir),
                "options": options_to_json(self.options),
                "script": self.script,
                "budget": budget.to_dict(),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> tuple[Setup, Budget]:
        from quickdev.limits.budget import Budget
        from quickdev.options import options_from_json

        data = json.loads(text)
        setup = cls(
            run_dir=Path(data["run_dir"]),
            options=options_from_json(data["options"]),
            script=str(data.get("script", "")),
        )
        return setup, Budget.from_dict(data["budget"])
