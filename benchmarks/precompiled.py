"""Quickdev's modules compiled to bytecode, as an installed copy has them.

Python writes a module's ``.pyc`` on its first import, so from a user's second run on
Quickdev's ~65 modules load compiled, as torch's do (pip compiles them at install). A
machine with ``PYTHONDONTWRITEBYTECODE`` set (or a fresh editable checkout) would
instead compile them from source on every timed run, about 30 ms that no user's steady
state pays: the benchmarks that compare Quickdev with plain ``python`` compile them once
before timing.
"""

from __future__ import annotations

import compileall

import quickdev


def compile_quickdev() -> None:
    compileall.compile_dir(str(quickdev.PACKAGE_DIR), quiet=1)
