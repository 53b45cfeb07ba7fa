"""What a journal's log says each path held before the job: its guard, the record that keeps
the original (``file``: a backup, or an append's length; ``absent``; ``dir``; ``shared``:
another job keeps it), read by every process that journals into the log and by the jobs
that share a path, so that each path has one original whoever changes it first."""

from __future__ import annotations

import json
import os
from pathlib import Path

from quickdev.limits.journal.records import Record, read_records

GUARDS = ("file", "absent", "dir", "shared")  # the kinds that say what a path held before


def learn(guards: dict[str, Record], record: Record) -> bool:
    """``record`` read from a log: the guard of its path, where it is one that counts."""
    path, kind = record.get("path"), record.get("kind")
    if not isinstance(path, str) or kind not in GUARDS:
        return False
    if kind == "file" and not (record.get("how") == "append" or os.path.lexists(
            record.get("backup", ""))):  # fmt: skip
        return False  # its backup never happened: neither did the change
    known = guards.get(path)
    if (
        known is None
        or record.get("promotes")
        or (known["kind"] == "shared" and record.get("how") == "handover")
    ):
        guards[path] = record
        return True
    return False


def first_guard(log: Path, path: str) -> Record | None:
    """``path``'s guard in the log ``log`` (another job's)."""
    guards: dict[str, Record] = {}
    for record in read_records(log):
        if record.get("path") == path:
            learn(guards, record)
    return guards.get(path)


def may_destroy(guard: Record, action: str) -> bool:
    """Whether ``action`` could destroy the original ``guard`` keeps without a copy: an
    append's original bytes by anything but another append, a hard link's by a change in
    place; another job's, unless what it keeps is known to be safe."""
    if guard["kind"] == "shared":
        original = guard.get("original")
        return original is None or may_destroy(original, action)
    how = guard.get("how")
    return (how == "append" and action != "append") or (how == "link" and action != "keep")


class LogTail:
    """The records a log gained since the last look (the announcements of writes skipped:
    they guard nothing)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def new_records(self) -> list[Record]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        whole = data.rfind(b"\n") + 1
        self.offset += whole
        found = []
        for line in data[:whole].split(b"\n"):
            if not line or b'"kind": "wrote"' in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                found.append(record)
        return found
