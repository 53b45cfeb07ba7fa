"""``file_safety`` in result.json: how the job kept the user's files (the file journal,
``limits/journal``), and what it could not keep.

Torch-free, like the rest of ``rundir``: the language server reads it for the result page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class YourEdit:
    """A file the person saved (or made again) while the job ran, after the job's change."""

    path: str  # left as the person saved it
    original: str | None  # the version from before the job, in the run directory; None: gone


@dataclass
class UnseenChange:
    """A change no journal saw (a writer it does not follow: see ``FileSafety.writers``; an
    edit of the person's): named, since it could not be put back."""

    path: str
    change: str  # changed | created | deleted
    why: str


@dataclass
class FileSafety:
    """How the job kept the user's files, and what it could not keep."""

    # journal: originals put aside before each change and put back at the end (the one
    # method for now; ``why`` says why not a copy-on-write view of the folder).
    method: str = "journal"
    why: str = ""
    # The writers whose changes the journal kept the originals of, and where that was not
    # every process of the job, why (no C compiler, the interposer switched off).
    writers: str = ""
    # The manifest of the working folder taken at start, to find changes no journal saw.
    checked_files: int = 0
    check_bound: int = 0  # files beyond it are not checked (``complete`` false)
    complete: bool = True
    # Folders left out: path -> why, in words (by reason, then the shallowest; 100 at most).
    not_checked: dict[str, str] = field(default_factory=dict)
    not_checked_total: int = 0
    your_edits: list[YourEdit] = field(default_factory=list)
    not_restored: list[UnseenChange] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileSafety:
        values = dict(data)
        values["your_edits"] = [YourEdit(**d) for d in values.get("your_edits") or []]
        values["not_restored"] = [UnseenChange(**d) for d in values.get("not_restored") or []]
        return cls(**values)
