"""Putting the user's original aside before a change, at the lowest cost that is safe.

- ``rename``: the job is about to replace or truncate the file (``open(p, "w")``,
  ``torch.save(p)``, ``save_file``): the original inode moves to the backup and
  the job writes a new one. No bytes are copied, whatever the size.
- ``link``: the job removes or renames the path but leaves the inode's bytes alone:
  a hard link keeps the original reachable. No bytes are copied.
- ``append``: the job opens the file with ``O_APPEND`` (``"a"``, a logger's file):
  every write lands past the original end, so the original is the first ``length``
  bytes of the same inode. Nothing is copied; the restore cuts the file back
  (``cut_back``) and keeps the appended bytes. Should the job later change the file
  otherwise, those first bytes are copied aside then (``copy_prefix``).
- ``copy``: the job opens the file to change it in place (``"r+"``, ``os.truncate``,
  a native library's update), or the cheaper ways are refused (another file system,
  a read-only directory). A reflink (copy-on-write clone) is tried first; only on a
  file system without clones are the bytes copied.

Across file systems (a runs directory on tmpfs, scratch or another disk) a rename
cannot move an original aside nor back: it is copied instead, each way with the same
rule as a rename's: a copy is written whole under another name, synced, and renamed
into place, so that a kill at any moment leaves the original whole in one of its two
places (``put_back``).
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

_FICLONE = 0x40049409  # Linux ioctl: clone a file's extents (Btrfs, XFS, bcachefs)


def rename_aside(path: str, backup: Path) -> str:
    try:
        os.rename(path, backup)
        return "rename"
    except OSError:
        return copy_aside(path, backup)


def link_aside(path: str, backup: Path) -> str:
    try:
        os.link(path, backup, follow_symlinks=False)
        return "link"
    except OSError:
        return copy_aside(path, backup)


def copy_aside(path: str, backup: Path) -> str:
    """A clone or a copy, written beside the backup and renamed: a backup that exists is whole."""
    return _copy_whole(path, str(backup))


def _copy_whole(source: str, target: str) -> str:
    """``source`` (a file or a link) at ``target``, with its mode and times: written under
    another name, synced, renamed; on any failure nothing is left at either name."""
    partial = target + ".partial"
    try:
        if os.path.islink(source):
            os.symlink(os.readlink(source), partial)
            how = "copy"
        else:
            how = "reflink" if _reflink(source, partial) else "copy"
            if how == "copy":
                shutil.copyfile(source, partial)
            shutil.copystat(source, partial)
            _fsync(partial)
        os.rename(partial, target)
    finally:
        if os.path.lexists(partial):
            os.unlink(partial)
    return how


def put_back(backup: str, path: str) -> None:
    """The original at ``path`` again. Across file systems: copied beside ``path`` under
    another name (``staging_name``), renamed over it, and only then is the backup removed;
    a kill in between leaves both whole, and ``already_back`` tells the next restore."""
    try:
        os.replace(backup, path)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    _copy_whole(backup, staging_name(path))
    os.replace(staging_name(path), path)
    os.unlink(backup)


def move(source: str, target: str) -> None:
    """A rename, or across file systems a whole copy then the source removed."""
    try:
        os.replace(source, target)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    if os.path.isdir(source) and not os.path.islink(source):
        shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
        shutil.rmtree(source)
    else:
        _copy_whole(source, target)
        os.unlink(source)


def staging_name(path: str) -> str:
    """Where a copy of the original is written before it replaces ``path``: beside it, on
    its file system, under a hidden name kept short enough for any file system."""
    folder, name = os.path.split(path)
    staged = f".{name}.quickdev-restoring"
    if len(staged.encode()) > 200:
        staged = f".{hashlib.sha256(name.encode()).hexdigest()[:32]}.quickdev-restoring"
    return os.path.join(folder, staged)


def already_back(path: str, backup: str) -> bool:
    """Whether ``path`` holds a copy of ``backup`` already (a restore across file systems
    killed after its rename, before it removed the backup): same size, mode and times."""
    try:
        here, kept = os.lstat(path), os.lstat(backup)
    except OSError:
        return False
    if here.st_dev == kept.st_dev:
        return here.st_ino == kept.st_ino
    if stat.S_ISLNK(here.st_mode) and stat.S_ISLNK(kept.st_mode):
        return os.readlink(path) == os.readlink(backup)
    return (here.st_size, here.st_mode, here.st_mtime_ns) == (
        kept.st_size, kept.st_mode, kept.st_mtime_ns)  # fmt: skip


def folder_state(st: os.stat_result) -> dict[str, int]:
    """What a ``dir`` or ``folder`` record keeps of a folder: its mode and times."""
    return {"mode": stat.S_IMODE(st.st_mode), "mtime_ns": st.st_mtime_ns,
            "atime_ns": st.st_atime_ns}  # fmt: skip


def set_folder_state(path: str, record: dict[str, Any]) -> None:
    """A folder's mode and times as a record kept them (records from before they were kept
    have neither: nothing to set)."""
    if "mode" in record and stat.S_IMODE(os.lstat(path).st_mode) != record["mode"]:
        os.chmod(path, record["mode"])
    if "mtime_ns" in record:
        os.utime(path, ns=(record["atime_ns"], record["mtime_ns"]), follow_symlinks=False)


def identity(st: os.stat_result) -> dict[str, int]:
    """What an ``append`` record needs to find and cut back the original."""
    return {
        "length": st.st_size,
        "dev": st.st_dev,
        "ino": st.st_ino,
        "mtime_ns": st.st_mtime_ns,
        "atime_ns": st.st_atime_ns,
    }


def copy_prefix(path: str, backup: Path, original: dict[str, int]) -> None:
    """The original of an appended file: its first ``length`` bytes, with its times."""
    backup.parent.mkdir(parents=True, exist_ok=True)
    partial = backup.with_name(backup.name + ".partial")
    try:
        with open(path, "rb") as src, open(partial, "wb") as dst:
            left = original["length"]
            while left > 0:
                chunk = src.read(min(left, 1 << 20))
                if not chunk:
                    break
                dst.write(chunk)
                left -= len(chunk)
            dst.flush()
            os.fsync(dst.fileno())
        shutil.copymode(path, partial)
        os.utime(partial, ns=(original["atime_ns"], original["mtime_ns"]))
        os.rename(partial, backup)
    finally:
        if partial.exists():
            partial.unlink()


def cut_back(path: str, original: dict[str, int]) -> None:
    """An appended file as it was: its first ``length`` bytes and its times."""
    os.truncate(path, original["length"])
    os.utime(path, ns=(original["atime_ns"], original["mtime_ns"]))


def same_inode(path: str, original: dict[str, int]) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (original["dev"], original["ino"])


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _reflink(source: str, target: str) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import fcntl

    with open(source, "rb") as src, open(target, "wb") as dst:
        try:
            fcntl.ioctl(dst.fileno(), _FICLONE, src.fileno())
        except OSError:
            return False
    return True


def recreate_empty(path: str, st: os.stat_result) -> None:
    """After a rename aside the path is empty, as a truncating open would leave it anyway;
    an open without O_CREAT (``os.open(p, O_WRONLY | O_TRUNC)``) still finds a file."""
    # mknod, not open: no file is opened to write, so no notice of a write (``edits``).
    try:
        os.mknod(path, stat.S_IFREG | stat.S_IMODE(st.st_mode))
    except PermissionError:  # systems where only root makes regular files so
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IMODE(st.st_mode)))
