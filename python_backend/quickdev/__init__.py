"""Torch Quickdev: quick-dev jobs, profiling and a language server for PyTorch training code.

``quickdev.run`` is imported lazily so that importing this package (as the
language server does) never imports torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Where this package is installed: the job puts its parent on the path, and tells the
# user's frames from ours by it.
PACKAGE_DIR = Path(__file__).resolve().parent

if TYPE_CHECKING:
    from quickdev.job.api import run as run

__all__ = ["PACKAGE_DIR", "__version__", "run"]


def __getattr__(name: str) -> Any:
    if name == "run":
        from quickdev.job.api import run

        return run
    raise AttributeError(f"module 'quickdev' has no attribute {name!r}")
