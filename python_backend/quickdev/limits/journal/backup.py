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
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

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
    if os.path.islink(path):
        os.symlink(os.readlink(path), backup)
        return "copy"
    partial = backup.with_name(backup.name + ".partial")
    try:
        how = "reflink" if _reflink(path, partial) else "copy"
        if how == "copy":
            shutil.copyfile(path, partial)
        shutil.copystat(path, partial)
        os.rename(partial, backup)
    finally:
        if partial.exists():
            partial.unlink()
    return how


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


def _reflink(source: str, target: Path) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import fcntl

    with open(source, "rb") as src, open(target, "wb") as dst:
        try:
            fcntl.ioctl(dst.fileno(), _FICLONE, src.fileno())
        except OSError:
            return False
    return True
