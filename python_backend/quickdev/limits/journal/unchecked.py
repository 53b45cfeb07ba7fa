"""Folders the start manifest leaves out because they are not the person's work, and why.

The manifest's bound (``manifest.MAX_FILES``) is spent on the person's own files. A
project folder often holds far more files that are not theirs: a virtualenv made with
``python -m venv .venv`` (10,000 files and more once torch is installed), installed
packages, an editor's or a tool's caches. Those are left out, each named in the result
with the reason in a person's words:

- a Python environment: a folder holding ``pyvenv.cfg`` (venv, virtualenv, uv, tox's
  environments, whatever its name) or ``conda-meta/`` (conda);
- installed packages: ``site-packages``, ``dist-packages``, ``node_modules``;
- what git ignores: in a git working tree, each folder ``.gitignore`` (and
  ``.git/info/exclude``, the global excludes) ignores as a whole, as git itself says.

The file journal itself still covers those folders: a Python write there is put back
like any other. Only the safety net (changes by writers the journal does not follow)
does not look there.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable

PYTHON_ENVIRONMENT = "a Python environment"
INSTALLED_PACKAGES = "installed packages"
IGNORED_BY_GIT = "ignored by git"
REASONS = (PYTHON_ENVIRONMENT, INSTALLED_PACKAGES, IGNORED_BY_GIT)  # as the result lists them

_PACKAGE_FOLDERS = frozenset({"site-packages", "dist-packages", "node_modules"})
# A Python environment says so in its top folder.
_ENVIRONMENT_MARKERS = frozenset({"pyvenv.cfg", "conda-meta"})
# git walks the untracked folders it does not ignore (25 ms for this repository on a
# loaded machine); an untracked data set of a million files would take seconds, and the
# job waits for this before the script starts: past this, nothing is left out for git.
_GIT_TIMEOUT_S = 1.0


def by_name(name: str) -> str | None:
    """Why a folder called ``name`` is not the person's work, before listing it."""
    return INSTALLED_PACKAGES if name in _PACKAGE_FOLDERS else None


def by_contents(names: Iterable[str]) -> str | None:
    """Why a folder whose entries are ``names`` is not the person's work."""
    return PYTHON_ENVIRONMENT if not _ENVIRONMENT_MARKERS.isdisjoint(names) else None


def ignored(folder: str) -> str:
    """Why a folder git ignores is left out: a Python environment (``.venv`` usually is
    ignored) is said to be one, in the words a person knows it by."""
    for marker in _ENVIRONMENT_MARKERS:
        if os.path.lexists(os.path.join(folder, marker)):
            return PYTHON_ENVIRONMENT
    return IGNORED_BY_GIT


def ignored_by_git(root: str) -> frozenset[str]:
    """The folders under ``root`` (relative paths) that git ignores as a whole; empty
    where ``root`` is not in a git working tree or git cannot say (not installed, a
    repository it refuses, too slow)."""
    if not _in_git_tree(root):
        return frozenset()
    command = ["git", "-C", root, "ls-files", "-z", "--others", "--ignored",
               "--exclude-standard", "--directory", "--no-empty-directory"]  # fmt: skip
    try:
        done = subprocess.run(
            command, capture_output=True, timeout=_GIT_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    if done.returncode != 0:
        return frozenset()
    # Folders end with a slash; files git ignores one by one stay in the manifest.
    entries = [os.fsdecode(e) for e in done.stdout.split(b"\0")]
    return frozenset(e.rstrip("/") for e in entries if e.endswith("/") and e != "/")


def _in_git_tree(root: str) -> bool:
    folder = os.path.abspath(root)
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent
