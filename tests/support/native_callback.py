"""Library code that native code calls back, for the tests of where a stop is raised.

Its files are written under a ``site-packages`` folder, as an installed package's are, so the
job takes them for a library's, never the user's (``limits/user_code.py``)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path

# qsort of the C library calls ``_compare`` back: an exception raised there cannot pass it
# (ctypes prints it and drops it), as one raised in a pybind11 callback cannot (the process
# aborts, as torch's did on a GPU machine).
SLOW_SORT = """\
import ctypes
import time

COMPARE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
compared = []


def _compare(a, b):
    time.sleep(0.02)
    compared.append(1)
    return 0


def sort_for(seconds):
    values = (ctypes.c_int * 8)()
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        ctypes.CDLL(None).qsort(values, len(values), ctypes.sizeof(ctypes.c_int), COMPARE(_compare))
"""

# Import-time work, as a C++ extension's initialisation is.
SLOW_IMPORT = """\
import time

time.sleep(0.5)
done = True
"""


def library_folder(root: Path, **modules: str) -> Path:
    """``root/site-packages`` holding each module's source; returns the folder."""
    folder = root / "site-packages"
    folder.mkdir(exist_ok=True)
    for name, source in modules.items():
        (folder / f"{name}.py").write_text(source)
    return folder


def library_module(root: Path, name: str, source: str) -> importlib.machinery.ModuleSpec:
    """The import spec of a library module ``name`` written under ``root``."""
    path = library_folder(root, **{name: source}) / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    return spec
