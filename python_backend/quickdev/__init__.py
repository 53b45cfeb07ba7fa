"""Torch Quickdev: quick-dev jobs, profiling and a language server for PyTorch training code.

``quickdev.run`` is imported lazily so that importing this package (as the
language server does) never imports torch.
"""

from __future__ import annotations

__version__ = "0.1.0"

# Not imported from typing: `python -m quickdev` runs this before __main__ can take the
# workspace off sys.path, so this module imports nothing (type checkers know the name).
TYPE_CHECKING = False

if TYPE_CHECKING:
    from pathlib import Path

    from quickdev.job.api import run as run

    # Where this package is installed (quickdev.processes holds it for the package's own
    # modules, which never import this facade: it imports the job lazily for ``run``).
    PACKAGE_DIR: Path

__all__ = ["PACKAGE_DIR", "__version__", "run"]


def __getattr__(name: str) -> object:
    if name == "run":
        from quickdev.job.api import run

        return run
    if name == "PACKAGE_DIR":
        from quickdev.processes import PACKAGE_DIR

        return PACKAGE_DIR
    raise AttributeError(f"module 'quickdev' has no attribute {name!r}")
