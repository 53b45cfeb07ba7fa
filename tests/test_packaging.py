"""`pip install .` as a user runs it: the source folder is left as it was."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO

# What a build reads: the project's metadata, its README and the package.
SOURCES = ("pyproject.toml", "README.md", "python_backend")


def test_pip_install_writes_nothing_into_the_source_folder(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(
                REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(REPO / name, source / name)
    before = set(p.relative_to(source) for p in source.rglob("*"))
    # The development venv holds the pinned build backend: no index is needed.
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(tmp_path / "installed"), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    left = sorted(
        str(p.relative_to(source)) for p in source.rglob("*") if p.relative_to(source) not in before
    )
    assert not left, f"left in the source folder: {left[:5]}"
    installed = tmp_path / "installed" / "quickdev"
    # The package whole, its data files included (the profiler plugin's offline charts).
    assert (installed / "cli.py").is_file()
    assert list((installed / "tensorboard" / "static").glob("*.js"))
