"""Which paths the journal keeps: the user's files, not the machinery's.

Everything under the job's working directory is the user's tree, except quick-dev's
own runs root. Outside it, a job also writes where nobody keeps anything by hand:
the Python installation (bytecode), caches (``~/.cache``: torch hub, datasets), the
temporary directory, and the kernel's pseudo file systems. Those are left alone;
anything else the job touches (a checkpoint in ``~/models``) is journaled too, and so
is the target of a link in the user's tree, wherever it is (``reachable``).
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
import tempfile
from pathlib import Path

from quickdev.cachedir import user_cache_root

_SYSTEM = ("/dev", "/proc", "/sys", "/run")
# Caches that native code keeps in the home folder under names of its own: CUDA's
# compiled kernels, Triton's.
_HOME_CACHES = (".nv", ".triton")


class Scope:
    def __init__(self, cwd: Path, runs_root: Path) -> None:
        self.cwd = _dir_prefix(cwd)
        self.runs_root = _dir_prefix(runs_root)
        cache = str(user_cache_root())
        home = os.path.expanduser("~")
        places = [*_SYSTEM, tempfile.gettempdir(), cache, sys.prefix, sys.base_prefix]
        places += [os.path.join(home, name) for name in _HOME_CACHES]
        places += [p for p in sysconfig.get_paths().values() if p]
        places += [p for p in [*site.getsitepackages(), site.getusersitepackages()] if p]
        self.elsewhere = tuple(sorted({_dir_prefix(Path(p)) for p in places}))
        self.system = tuple(_dir_prefix(Path(p)) for p in _SYSTEM)

    def to_text(self) -> str:
        """One prefix a line, its kind first: what the interposer (``interpose.c``, which
        decides the same way) and the journal process (``from_text``) read."""
        lines = [f"-{self.runs_root}", f"+{self.cwd}"]
        lines += [f"~{p}" for p in self.elsewhere] + [f"!{p}" for p in self.system]
        return "\n".join(lines)

    @classmethod
    def from_text(cls, text: str) -> Scope:
        scope = cls.__new__(cls)
        kinds: dict[str, list[str]] = {"-": [], "+": [], "~": [], "!": []}
        for line in text.splitlines():
            kinds[line[0]].append(line[1:])
        scope.runs_root, scope.cwd = kinds["-"][0], kinds["+"][0]
        scope.elsewhere, scope.system = tuple(kinds["~"]), tuple(kinds["!"])
        return scope

    def keeps(self, path: str) -> bool:
        """Whether a change at the absolute, normalized ``path`` is journaled."""
        inside = path + os.sep  # a folder named by a prefix counts as in it (the cache's own)
        if inside.startswith(self.runs_root):
            return False
        if inside.startswith(self.cwd):
            return True
        return not inside.startswith(self.elsewhere)

    def reachable(self, path: str) -> bool:
        """Whether the target of a link in the user's tree is journaled: wherever it is
        (``/tmp``, another disk), but never in a runs root or a pseudo file system."""
        inside = path + os.sep
        return not (inside.startswith(self.runs_root) or inside.startswith(self.system))


def _dir_prefix(path: Path) -> str:
    text = os.path.abspath(path)
    return text if text.endswith(os.sep) else text + os.sep
