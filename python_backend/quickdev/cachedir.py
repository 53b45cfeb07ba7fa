"""Where Quickdev keeps what outlives a job and is not the user's: ``$XDG_CACHE_HOME/quickdev``
(``~/.cache/quickdev`` by default). The file journal leaves this place alone."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # pathlib is imported where a Path is made: a job's restart (the file
if TYPE_CHECKING:  # interposer's) reads the cache before anything else is imported
    from pathlib import Path


def user_cache_folder() -> str:
    """The user's cache folder (not Quickdev's own part of it)."""
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def user_cache_root() -> Path:
    from pathlib import Path

    return Path(user_cache_folder())


def quickdev_cache_dir(*parts: str) -> Path:
    """``<user cache>/quickdev/<parts>``; not created here."""
    return user_cache_root().joinpath("quickdev", *parts)
