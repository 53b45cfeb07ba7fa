"""Putting the user's original aside before a change, at the lowest cost that is safe.

- ``rename``: the job is about to replace or truncate the file (``open(p, "w")``,
  ``torch.save(p)``, ``save_file``): the original inode moves to the backup and
  the job writes a new one. No bytes are copied, whatever the size.
- ``link``: the job removes or renames the path but leaves the inode's bytes alone:
  a hard link keeps the original reachable. No bytes are copied.
- ``copy``: the job opens the file to change it in place (``"a"``, ``"r+"``,
  ``os.truncate``), or the cheaper ways are refused (another file system, a
  read-only directory). A reflink (copy-on-write clone) is tried first; only on a
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
