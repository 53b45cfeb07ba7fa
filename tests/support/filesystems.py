"""Real file systems for the file journal's tests: a second one (another device than the
test's folder), and a small one that fills up. Each skips with the reason where the host
cannot give it (no /dev/shm on another device, mounts refused)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


def other_file_system(near: Path) -> Path:
    """A fresh folder on another file system than ``near``: /dev/shm where it is one."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and os.stat(shm).st_dev != os.stat(near).st_dev:
        folder = shm / f"quickdev-test-{uuid.uuid4().hex[:8]}"
        folder.mkdir()
        return folder
    pytest.skip("no writable /dev/shm on another file system than the test's folder")


@contextlib.contextmanager
def mounted_tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (mount's syntax: "20m") mounted at ``where`` for the block."""
    where.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
            check=True, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", "") or exc
        pytest.skip(f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {detail}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def fill(folder: Path, leave: int = 0) -> Path:
    """A file in ``folder`` that takes its file system's free space, but ``leave`` bytes."""
    stats = os.statvfs(folder)
    free = stats.f_bavail * stats.f_frsize
    filler = folder / ".filler"
    with open(filler, "wb") as f, contextlib.suppress(OSError):
        f.write(b"\0" * max(0, free - leave))
    return filler
