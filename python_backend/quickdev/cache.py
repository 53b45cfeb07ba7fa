"""Where Quickdev keeps what it learns about this machine between runs (never the user's tree)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/quickdev``, else ``~/.cache/quickdev``: the place caches go, which the
    file journal leaves alone (limits/journal/scope.py)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "quickdev"
