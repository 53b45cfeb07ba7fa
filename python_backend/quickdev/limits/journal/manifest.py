"""The safety net: what the working folder held at the job's start, to name what no journal saw.

Before the user's code runs, each file under the working folder is recorded by size,
modification time and inode (one ``lstat`` each; no content is read). After the
restore, a file whose record differs, a new file, or a missing one, that no journal
recorded (this job's, its children's, or another job's that ran meanwhile), was
changed by something the journal does not follow: a program that is not Python, a
native library not in the registry, or the person. It could not be put back (no copy
was made before the change) and it is named, never passed over.

Bounded: at most ``MAX_FILES`` files, folder by folder from the top, each folder listed
in full or not at all. Version-control folders and the runs root are left out, and so
are folders that are not the person's work (``unchecked``: a virtualenv, installed
packages, what git ignores), so that the bound is spent on the person's files. A folder
left out, or past the bound, is recorded as there (``unlisted``) and named in the result
(``not_checked``); at the end it is never taken for a new folder, whose files would all
read as created. One ``lstat`` a file, warm: measured by ``benchmarks/journal.py`` at
12–18 µs a file on a loaded 2-core machine (10,000 files: 120–180 ms, at the start and
again at the end); a project folder of a few hundred files costs a few milliseconds.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from quickdev.limits.journal import unchecked
from quickdev.rundir.file_safety import UnseenChange
from quickdev.rundir.jsonio import read_json_object, write_json

MAX_FILES = 10_000
# Once the bound is near, folders are still read (names only, no lstat) to find those
# that fit; this many names in all, and the rest is past the bound unread.
MAX_NAMES = 10 * MAX_FILES
PAST_BOUND = f"past the first {MAX_FILES:,} files"
# Version control, the runs, and Python's bytecode caches: any import writes those
# (Quickdev's own processes too, where the project holds its source), derived from the
# sources and never the person's work. A fresh clone's `make demo` named 16 of them as
# not put back.
SKIPPED = frozenset({".git", ".hg", ".svn", ".quickdev", "__pycache__"})
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
    # Folders that were there (in a listed folder) and were not listed: relative path ->
    # why, in a person's words. None: a manifest of an earlier version, which did not say.
    unlisted: dict[str, str] | None = field(default_factory=dict)
    complete: bool = True  # no folder was left out for the bound

    def write(self, path: Path) -> None:
        write_json(path, {"root": self.root, "complete": self.complete, "folders": self.folders,
                          "unlisted": self.unlisted, "files": self.files})  # fmt: skip

    @classmethod
    def read(cls, path: Path) -> Manifest | None:
        data = read_json_object(path)
        if data is None:
            return None
        files = {k: (v[0], v[1], v[2]) for k, v in data.get("files", {}).items()}
        complete = data.get("complete", True)
        unlisted = data.get("unlisted")
        if unlisted is None and complete:
            unlisted = {}  # every folder was listed
        return cls(data["root"], files, list(data.get("folders", [])), unlisted, complete)

    def not_checked(self) -> dict[str, str]:
        """The folders left out (absolute path -> why): by reason (the one a person knows
        at sight first: their virtualenv), then the shallowest first."""
        order = {why: i for i, why in enumerate(unchecked.REASONS)}

        def key(item: tuple[str, str]) -> tuple[int, int, str]:
            path, why = item
            return order.get(why, len(order)), path.count(os.sep), path

        found = sorted((self.unlisted or {}).items(), key=key)
        return {os.path.join(self.root, path): why for path, why in found}


def take(root: Path, runs_root: Path, bound: int = MAX_FILES) -> Manifest:
    manifest = Manifest(str(root))
    unlisted: dict[str, str] = {}
    manifest.unlisted = unlisted
    skip_at = str(runs_root)
    ignored = unchecked.ignored_by_git(manifest.root)
    queue = deque([""])
    names_read = 0
    while queue:
        relative = queue.popleft()
        if names_read > MAX_NAMES:
            unlisted[relative], manifest.complete = PAST_BOUND, False
            continue
        entries = _scan(os.path.join(manifest.root, relative), skip_at)
        names_read += len(entries)
        why = unchecked.by_contents(e.name for e in entries) if relative else None
        files = [e for e in entries if not _is_dir(e)]
        if why is None and len(manifest.files) + len(files) > bound:
            why, manifest.complete = PAST_BOUND, False
        if why is not None:
            unlisted[relative] = why
            continue
        manifest.folders.append(relative)
        for entry in entries:
            path = os.path.join(relative, entry.name) if relative else entry.name
            if not _is_dir(entry):
                stamp = _stamp(entry)
                if stamp is not None:
                    manifest.files[path] = stamp
                continue
            why = unchecked.by_name(entry.name)
            if why is None and path in ignored:
                why = unchecked.ignored(entry.path)
            if why is not None:
                unlisted[path] = why
            else:
                queue.append(path)
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
        for entry in _scan(os.path.join(root, relative), skip_at):
            path = os.path.join(relative, entry.name) if relative else entry.name
            if _is_dir(entry):
                if path not in listed and _is_new_folder(manifest, path):
                    queue.append(path)  # a new folder: its files are new too
                continue
            now.add(path)
            if os.path.join(root, path) in journaled:
                continue
            stamp = _stamp(entry)
            if stamp is None:
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


def _is_new_folder(manifest: Manifest, path: str) -> bool:
    """A folder neither listed nor left out at the start was made since. Where the
    manifest does not say what it left out (an earlier version's, past its bound), no
    folder is taken for new: its files would all read as created."""
    if manifest.unlisted is None:
        return False
    return path not in manifest.unlisted


def _scan(folder: str, skip_at: str) -> list[os.DirEntry[str]]:
    """The entries of ``folder`` (names and kinds only, no ``lstat``), less the folders
    never looked into; symbolic links are files here."""
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except OSError:
        return []
    return [
        e for e in entries
        if not _is_dir(e) or (e.name not in SKIPPED and e.path != skip_at)
    ]  # fmt: skip


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _stamp(entry: os.DirEntry[str]) -> Stamp | None:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)
