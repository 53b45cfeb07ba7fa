"""A change the journal refuses, as the system refuses one: an ``OSError`` with the errno of the
failure (ENOSPC: no room for the original; EPERM: the job has ended) and one line saying
why, naming the file."""

from __future__ import annotations

import errno


class JournalRefused(OSError):
    """A change refused to the script as the system refuses one (``errno``), in one line."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)

    def __str__(self) -> str:
        return str(self.strerror)


class LateChangeRefused(JournalRefused, PermissionError):
    """A thread still running once the tree is restored may change nothing in it."""


def cannot_keep(path: str, exc: OSError) -> JournalRefused:
    return JournalRefused(
        exc.errno or errno.EIO,
        f"quickdev: cannot keep a copy of {path} before the job changes it "
        f"({exc.strerror or exc}); the file was left as it was",
    )
