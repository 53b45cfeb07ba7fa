"""What result.json says of the user's files: the method, the person's edits kept, and the
changes no journal saw (``manifest``), for the job's own end and for recovery alike."""

from __future__ import annotations

import os
from pathlib import Path

from quickdev.limits.journal.manifest import MAX_FILES, Manifest, unseen_changes
from quickdev.limits.journal.records import Record, read_records
from quickdev.limits.journal.restore import Restored
from quickdev.rundir.layout import JOURNAL_DONE, JOURNAL_FILE

# Why the journal and not a copy-on-write view of the folder (docs/file-safety.md, "Why a
# journal, not a copy-on-write view"; measured by benchmarks/journal.py).
WHY = (
    "originals are put aside before each change and put back at the end; a copy-on-write "
    "overlay of the folder would copy a file whole on its first change (a 1 GiB log for "
    "one appended line) on a file system without clones, such as ext4"
)
NOT_CHECKED_SHOWN = 100  # folders named in result.json; the count says how many in all


def check(
    done: Restored,
    manifest: Manifest | None,
    records: list[Record],
    run_dir: Path,
    since: float,
    until_ns: int | None = None,
) -> None:
    """Fill ``done.safety``: the start manifest compared with the tree as restored (after a
    kill, ``until_ns``: changes made once the job was dead are not its)."""
    from quickdev.rundir.result import FileSafety

    safety = FileSafety(method="journal", why=WHY, check_bound=MAX_FILES)
    safety.your_edits = done.your_edits
    if manifest is not None:
        journaled = _paths(records) | _others_journaled(run_dir, since)
        journaled |= {e.path for e in done.your_edits}
        safety.not_restored = unseen_changes(manifest, journaled, run_dir.parent, until_ns)
        safety.checked_files = len(manifest.files)
        safety.complete = manifest.complete
        not_checked = manifest.not_checked()
        safety.not_checked = dict(list(not_checked.items())[:NOT_CHECKED_SHOWN])
        safety.not_checked_total = len(not_checked)
    done.safety = safety


def _paths(records: list[Record]) -> set[str]:
    """The paths a journal put aside or took (not those it only saw written by others)."""
    kinds = ("file", "absent", "dir", "shared")
    return {r["path"] for r in records if r["kind"] in kinds and isinstance(r.get("path"), str)}


def _others_journaled(run_dir: Path, since: float) -> set[str]:
    """Paths other jobs in this runs root journaled since ``since`` (ranks of one run, two
    jobs in one folder): their restore, not an unseen change, made those differ."""
    found: set[str] = set()
    for name in (JOURNAL_FILE, JOURNAL_DONE):
        for log in run_dir.parent.glob(f"*/{name}"):
            try:
                if log.parent == run_dir or os.stat(log).st_mtime < since:
                    continue
            except OSError:
                continue
            found |= _paths(read_records(log))
    return found
