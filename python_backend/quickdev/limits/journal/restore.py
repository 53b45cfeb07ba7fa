"""Put the user's tree back as the records say it was; keep the job's versions in the run dir.

Used at the end of every job and by recovery after a job was killed, from the log on
disk, so both do exactly the same. Steps, in order:

1. the job's versions move into ``RUN_DIR/outputs/<path relative to the cwd>``
   (renames: no bytes copied); folders the job created move as a whole;
2. originals come back from their backups, folders the job removed are made again;
3. an original that another running job shares is handed over to it instead;
4. the folders the job changed get their modes and times back, deepest first.

Across file systems the renames are copies (``backup.put_back``, ``backup.move``),
each as safe against a kill as a rename. On a full disk the user's files come first:
a version of the job's that cannot be kept in the run directory is said (``notes``)
and taken out of the user's tree all the same.

A file the job appended to (``how: append``) is cut back to its original length; the
bytes the job appended are what the run directory keeps. A path that holds the
person's own version, saved after the job's last write (``edits``), is left as it
is: the original goes to ``RUN_DIR/originals`` and ``your_edits`` says so.

At the job's own end (not in recovery, where the user may have made files since),
a name that is new in a folder the job listed (``listing``) and that no journal
recorded is taken as the job's (a native writer's), unless the watcher (``edits``)
saw someone else write it: the person's new file stays, and the end's check
(``manifest``) names it.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from quickdev.limits.journal import backup
from quickdev.limits.journal.claims import Claims
from quickdev.limits.journal.edits import Edits
from quickdev.limits.journal.records import Record, append_to
from quickdev.rundir.file_safety import FileSafety, YourEdit
from quickdev.rundir.layout import BACKUPS_DIR, JOURNAL_FILE, ORIGINALS_DIR, OUTPUTS_DIR
from quickdev.rundir.result import Output


@dataclass
class Restored:
    outputs: list[Output] = field(default_factory=list)
    originals: int = 0  # files and folders put back as they were
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # one line each, for the user
    your_edits: list[YourEdit] = field(default_factory=list)
    safety: FileSafety | None = None  # filled by ``safety.check`` after the restore


def originals(records: list[Record]) -> dict[str, Record]:
    """Each path's state before the job: its first record that took effect."""
    first: dict[str, Record] = {}
    for record in records:
        path = record.get("path")
        if not isinstance(path, str):
            continue
        if path in first and first[path]["kind"] != "shared" and not record.get("promotes"):
            continue
        if record["kind"] == "file" and not _backup_exists(record):
            continue  # the backup never happened, so neither did the change
        if record["kind"] in ("absent", "file", "dir", "shared"):
            first[path] = record
    return first


def folder_states(records: list[Record]) -> dict[str, Record]:
    """Each folder's mode and times before any job changed it: its earliest record."""
    states: dict[str, Record] = {}
    for record in records:
        path = record.get("path")
        if record["kind"] not in ("dir", "folder") or "mtime_ns" not in record:
            continue
        known = states.get(path) if isinstance(path, str) else None
        if isinstance(path, str) and (known is None or record["t"] < known["t"]):
            states[path] = record
    return states


def added_natively(
    records: list[Record], state: dict[str, Record], claims: Claims, edits: Edits
) -> list[Record]:
    """``absent`` records for names that appeared in listed folders without a record."""
    listings = [r for r in records if r["kind"] == "listing" and isinstance(r.get("names"), list)]
    if not listings:
        return []
    others = claims.recorded_paths()
    runs_root = str(claims.runs_root)
    found = []
    for listing in listings:
        folder, before = listing["path"], set(listing["names"])
        try:
            now = os.listdir(folder)
        except OSError:
            continue
        for name in now:
            path = os.path.join(folder, name)
            if name in before or path in state or path in others or path == runs_root:
                continue
            if edits.persons(path):
                continue  # someone else made it while the job ran: theirs, left in place
            found.append({"kind": "absent", "path": path, "how": "listing"})
    return found


def restore(
    run_dir: Path, records: list[Record], claims: Claims, *, at_job_end: bool = False
) -> Restored:
    """``at_job_end``: the job's own restore; otherwise recovery from a dead job's log."""
    cwd = next((r["cwd"] for r in records if r["kind"] == "start"), os.getcwd())
    outputs_root = run_dir / OUTPUTS_DIR
    done = Restored()
    state = originals(records)
    edits = Edits(records, None if at_job_end else run_dir / JOURNAL_FILE)
    for record in added_natively(records, state, claims, edits) if at_job_end else []:
        state[record["path"]] = record
    others = _other_jobs_writes(records, claims) if edits.last or edits.until else {}
    for path in [p for p, r in state.items() if r["kind"] == "file"]:
        if not edits.persons(path):
            continue
        if others.get(path, 0.0) > _last_write(records, path) or claims.sharers(path):
            continue  # another job wrote it since: not the person's edit
        _keep_persons_edit(path, state.pop(path), run_dir / ORIGINALS_DIR, cwd, done)
    folders = _folders_to_set(records, edits, done)
    by_depth = sorted(state, key=lambda p: p.count(os.sep))
    # Running jobs that wrote a path after this one: they keep it, and its original.
    sharers = {path: claims.sharers(path) for path in by_depth if state[path]["kind"] != "dir"}
    for path in by_depth:
        record = state[path]
        try:
            kept = _kept_at(outputs_root, cwd, path)
            _take_job_version(path, record, kept, bool(sharers.get(path)), done)
        except OSError as exc:
            _not_kept(path, record, exc, done)
    for path in by_depth:
        record = state[path]
        try:
            done.originals += _put_back(path, record, run_dir, sharers.get(path, []), records)
        except OSError as exc:
            done.problems.append(f"cannot restore {path} ({_reason(exc)})")
    _set_folders(folders, claims, done)
    return done


def _folders_to_set(records: list[Record], edits: Edits, done: Restored) -> dict[str, Record]:
    """The folders whose mode and times go back: not those the person changed meanwhile
    (an edit of a name in it, or after a kill any change once the job was dead)."""
    states = folder_states(records)
    touched = {os.path.dirname(p) for p, edit in edits.last.items() if edit is not None}
    keep = {}
    for folder, record in states.items():
        if folder in touched:
            continue
        if edits.until is not None and _changed_since(folder, edits.until):
            continue
        keep[folder] = record
    return keep


def _changed_since(path: str, until_ns: int) -> bool:
    try:
        return os.lstat(path).st_ctime_ns > until_ns
    except OSError:
        return False  # gone: made again from its record


def _set_folders(folders: dict[str, Record], claims: Claims, done: Restored) -> None:
    """Deepest first, as putting a name back changes its folder's times. A folder that a
    running job also changes is its to set: the original state is handed over."""
    others = claims.in_folders(set(folders))
    for folder in sorted(folders, key=lambda p: -p.count(os.sep)):
        record = folders[folder]
        try:
            if folder in others:
                append_to(others[folder], {**record, "kind": "folder", "how": "handover"})
            elif os.path.isdir(folder) and not os.path.islink(folder):
                backup.set_folder_state(folder, record)
        except OSError as exc:
            done.notes.append(f"the mode and times of {folder} could not be put back "
                              f"({_reason(exc)})")  # fmt: skip


def _not_kept(path: str, record: Record, exc: OSError, done: Restored) -> None:
    """The job's version of ``path`` cannot go into the run directory (a full disk): the
    user's tree comes first, so it leaves the tree all the same, and that is said."""
    kind, reason = record["kind"], _reason(exc)
    try:
        if kind == "absent" and record.get("how") != "listing":
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            elif os.path.lexists(path):
                os.unlink(path)
        elif kind == "file" and record.get("how") != "append" and os.path.lexists(path):
            os.unlink(path)  # room for the original, which comes back from its backup next
    except OSError as again:
        done.problems.append(f"cannot take the job's {path} out of your folder ({_reason(again)})")
        return
    done.notes.append(f"the job's version of {path} could not be kept ({reason})")


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _take_job_version(path: str, record: Record, kept: Path, shared: bool, done: Restored) -> None:
    kind = record["kind"]
    if kind == "dir" or not os.path.lexists(path):
        if kind == "file":
            done.outputs.append(Output(requested=path, written=None, change="deleted"))
        return
    if kind == "file" and record.get("how") == "append" and backup.same_inode(path, record):
        kept.parent.mkdir(parents=True, exist_ok=True)
        _copy_tail(path, kept, record["length"])
        done.outputs.append(Output(requested=path, written=str(kept), change="appended"))
        return
    if kind == "file" and backup.already_back(path, record.get("backup", "")):
        return  # linked aside and never changed (a failed remove), or put back already
    change = "created" if kind == "absent" else "changed"
    kept.parent.mkdir(parents=True, exist_ok=True)
    if kind == "shared" or shared:
        _link_or_copy(path, kept)  # another job keeps the path; this job keeps its view
    else:
        _move(path, kept)
    files = [kept] if not kept.is_dir() else sorted(p for p in kept.rglob("*") if not p.is_dir())
    done.outputs.extend(
        Output(requested=os.path.join(path, os.path.relpath(f, kept)) if f != kept else path,
               written=str(f), change=change)
        for f in files
    )  # fmt: skip


def _put_back(
    path: str, record: Record, run_dir: Path, sharers: list[Path], records: list[Record]
) -> int:
    kind = record["kind"]
    if kind == "absent" and sharers:
        append_to(sharers[0], {"kind": "absent", "path": path, "how": "handover"})
        return 0
    if kind == "dir":
        if os.path.isdir(path):
            return 0
        os.makedirs(path, exist_ok=True)  # its mode and times: ``_set_folders``
        return 1
    if kind != "file":
        return 0
    if record.get("how") == "append":
        if not sharers:
            return _cut_back(path, record, records)
        # Another job writes here on: it gets the original bytes as a file of its own.
        prefix = run_dir / BACKUPS_DIR / f"appended-{os.path.basename(path)}"
        backup.copy_prefix(_inode_home(path, record, records), prefix, record)
        record = {**record, "backup": str(prefix)}
    aside = Path(record["backup"])
    if sharers:
        # The other job keeps writing here; it restores this original when it ends.
        log = sharers[0]
        moved = log.parent / BACKUPS_DIR / f"from-{run_dir.name}-{aside.name}"
        moved.parent.mkdir(exist_ok=True)
        backup.move(str(aside), str(moved))
        append_to(log, {"kind": "file", "path": path, "backup": str(moved), "how": "handover"})
        return 0
    os.makedirs(os.path.dirname(path), exist_ok=True)
    backup.put_back(str(aside), path)
    return 1


def _other_jobs_writes(records: list[Record], claims: Claims) -> dict[str, float]:
    times = [r.get("t", 0.0) for r in records if r["kind"] == "wrote"]
    return claims.others_wrote(min(times) - 1.0) if times else {}


def _last_write(records: list[Record], path: str) -> float:
    return max((r.get("t", 0.0) for r in records if r["kind"] == "wrote" and r["path"] == path),
               default=0.0)  # fmt: skip


def _backup_exists(record: Record) -> bool:
    return record.get("how") == "append" or os.path.lexists(record.get("backup", ""))


def _keep_persons_edit(
    path: str, record: Record, originals: Path, cwd: str, done: Restored
) -> None:
    """The person saved over ``path`` (or made it again) after the job: theirs stays."""
    where = None
    if record.get("how") != "append":  # an appended original was the file they saved over
        kept = _kept_at(originals, cwd, path)
        kept.parent.mkdir(parents=True, exist_ok=True)
        try:
            backup.move(record["backup"], str(kept))
            where = str(kept)
        except OSError as exc:
            done.problems.append(f"cannot keep the original of {path} ({exc})")
    done.your_edits.append(YourEdit(path=path, original=where))


def _cut_back(path: str, record: Record, records: list[Record]) -> int:
    """The appended file cut back, and put back at ``path`` if it was moved aside."""
    home = _inode_home(path, record, records)
    backup.cut_back(home, record)
    if home != path:
        os.replace(home, path)
    return 1


def _inode_home(path: str, record: Record, records: list[Record]) -> str:
    """Where the appended inode is: still at ``path``, or a later backup (a child process
    of the job, which journals on its own, renamed or linked it aside)."""
    if backup.same_inode(path, record):
        return path
    for other in records:
        found = other.get("backup")
        if other.get("path") == path and found and backup.same_inode(found, record):
            return str(found)
    raise OSError(f"the file the job appended to is no longer at {path}")


def _copy_tail(path: str, kept: Path, start: int) -> None:
    with open(path, "rb") as src, open(kept, "wb") as dst:
        src.seek(start)
        shutil.copyfileobj(src, dst)


def _kept_at(outputs_root: Path, cwd: str, path: str) -> Path:
    relative = os.path.relpath(path, cwd)
    if relative.startswith(os.pardir):
        relative = Path(path).relative_to(Path(path).anchor).as_posix()
    return outputs_root / relative


def _move(src: str, dst: Path) -> None:
    if dst.is_dir() and os.path.isdir(src):
        for name in os.listdir(src):
            _move(os.path.join(src, name), dst / name)
        os.rmdir(src)
        return
    backup.move(src, str(dst))


def _link_or_copy(src: str, dst: Path) -> None:
    if os.path.isdir(src):
        shutil.copytree(src, dst, copy_function=_link_or_copy_file, dirs_exist_ok=True)
    else:
        _link_or_copy_file(src, str(dst))


def _link_or_copy_file(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
