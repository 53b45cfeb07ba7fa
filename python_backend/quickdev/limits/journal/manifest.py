"""The safety net: what the working folder held at the job's start, to name what no journal saw.

Before the user's code runs, each file under the working folder is recorded by size,
modification time and inode (one ``lstat`` each; no content is read). After the
restore, a file whose record differs, a new file, or a missing one, that no journal
recorded (this job's, its children's, or another job's that ran meanwhile), was
changed by something the journal does not follow: a program that is not Python, a
native library not in the registry, or the person. It could not be put back (no copy
was made before the change) and it is named, never passed over.

Bounded: at most ``MAX_FILES`` files, folder by folder from the top (version-control
folders and the runs root are left out); a larger tree is checked up to the bound and
the result says so (``complete``). One ``lstat`` a file, warm: measured by
``benchmarks/journal.py`` at 12–18 µs a file on a loaded 2-core machine (10,000 files:
120–180 ms, at the start and again at the end); a project folder of a few hundred
files costs a few milliseconds.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from quickdev.rundir.jsonio import read_json_object, write_json
from quickdev.rundir.result import UnseenChange

MAX_FILES = 10_000
SKIPPED = frozenset({".git", ".hg", ".svn", ".quickdev"})
WHY = (
    "changed while the job ran by something the journal does not follow (a program that "
    "is not Python, a library it does not know, or your own edit); no copy was kept"
)

Stamp = tuple[int, int, int]  # size, mtime_ns, inode


@dataclass
class Manifest:
    root: str
    files: dict[str, Stamp] = field(default_factory=dict)  # relative path -> stamp
    folders: list[str] = field(default_factory=list)  # listed in full
    complete: bool = True

    def write(self, path: Path) -> None:
        write_json(path, {"root": self.root, "complete": self.complete,
                          "folders": self.folders, "files": self.files})  # fmt: skip

    @classmethod
    def read(cls, path: Path) -> Manifest | None:
        data = read_json_object(path)
        if data is None:
            return None
        files = {k: (v[0], v[1], v[2]) for k, v in data.get("files", {}).items()}
        return cls(data["root"], files, list(data.get("folders", [])), data.get("complete", True))


def take(root: Path, runs_root: Path, bound: int = MAX_FILES) -> Manifest:
    manifest = Manifest(str(root))
    skip_at = str(runs_root)
    queue = deque([""])
    while queue:
        relative = queue.popleft()
        entries = _scan(os.path.join(manifest.root, relative), skip_at)
        files = [(name, stamp) for name, stamp, is_dir in entries if not is_dir]
        if len(manifest.files) + len(files) > bound:
            manifest.complete = False
            break
        manifest.folders.append(relative)
        for name, stamp, is_dir in entries:
            path = os.path.join(relative, name) if relative else name
            if is_dir:
                queue.append(path)
            elif stamp is not None:
                manifest.files[path] = stamp
    return manifest


def unseen_changes(
    manifest: Manifest, journaled: set[str], runs_root: Path, until_ns: int | None = None
) -> list[UnseenChange]:
    """Changes in the folders the manifest listed that no journal recorded; with
    ``until_ns`` (recovery), not those made after then, once the job was dead."""
    root, skip_at = manifest.root, str(runs_root)
    listed = set(manifest.folders)
    found: list[UnseenChange] = []
    now: set[str] = set()
    queue = deque(manifest.folders)
    while queue and len(now) <= 2 * MAX_FILES:
        relative = queue.popleft()
        for name, stamp, is_dir in _scan(os.path.join(root, relative), skip_at):
            path = os.path.join(relative, name) if relative else name
            if is_dir:
                if path not in listed:
                    queue.append(path)  # a new folder: its files are new too
                continue
            now.add(path)
            if os.path.join(root, path) in journaled or stamp is None:
                continue
            before = manifest.files.get(path)
            if before is None:
                found.append(UnseenChange(os.path.join(root, path), "created", WHY))
            elif before != stamp:
                found.append(UnseenChange(os.path.join(root, path), "changed", WHY))
    for path in manifest.files:
        absolute = os.path.join(root, path)
        if path not in now and os.path.dirname(path) in listed and absolute not in journaled:
            found.append(UnseenChange(absolute, "deleted", WHY))
    if until_ns is not None:
        found = [c for c in found if c.change == "deleted" or _changed_before(c.path, until_ns)]
    return found


def _changed_before(path: str, until_ns: int) -> bool:
    try:
        return os.lstat(path).st_ctime_ns <= until_ns
    except OSError:
        return False


def _scan(folder: str, skip_at: str) -> list[tuple[str, Stamp | None, bool]]:
    """(name, stamp, is a folder) for each entry; symbolic links are files here."""
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except OSError:
        return []
    found: list[tuple[str, Stamp | None, bool]] = []
    for entry in entries:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            if is_dir:
                if entry.name not in SKIPPED and entry.path != skip_at:
                    found.append((entry.name, None, True))
                continue
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        found.append((entry.name, (st.st_size, st.st_mtime_ns, st.st_ino), False))
    return found
