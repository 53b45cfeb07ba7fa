"""The start manifest (the safety net): nothing the job did not change is named, and the
bound is spent on the person's files, whatever else the folder holds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from quickdev.limits.journal import manifest
from quickdev.limits.journal.manifest import Manifest, take, unseen_changes
from quickdev.limits.journal.unchecked import (
    IGNORED_BY_GIT,
    INSTALLED_PACKAGES,
    PYTHON_ENVIRONMENT,
)


def many_files(folder: Path, count: int, per_folder: int = 500) -> None:
    for i in range(count):
        sub = folder / f"pkg{i // per_folder}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"m{i}.py").write_bytes(b"x")


def project(root: Path) -> Path:
    """The person's own files: a script, a module, a config."""
    (root / "src").mkdir(parents=True)
    (root / "train.py").write_text("print('train')\n")
    (root / "src" / "model.py").write_text("class Model: ...\n")
    (root / "config.yaml").write_text("lr: 0.1\n")
    return root


def venv(folder: Path, files: int) -> Path:
    """A real virtualenv (its pyvenv.cfg), under a name nobody guesses, with ``files``
    files of installed packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    many_files(folder / "lib" / "site-packages-of-some-kind", files)
    return folder


def named(taken: Manifest, root: Path) -> list[tuple[str, str]]:
    """The changes named at the end: paths relative to ``root``, with their kind."""
    found = unseen_changes(taken, set(), root / ".quickdev" / "runs")
    return sorted((os.path.relpath(c.path, root), c.change) for c in found)


def left_out(taken: Manifest, root: Path) -> dict[str, str]:
    return {os.path.relpath(path, root): why for path, why in taken.not_checked().items()}


def test_a_venv_of_12000_files_is_left_out_and_nothing_is_named(tmp_path: Path) -> None:
    root = project(tmp_path / "project")
    venv(root / "env-3.11", 12_000)
    taken = take(root, root / ".quickdev" / "runs")
    assert named(taken, root) == []
    assert left_out(taken, root) == {"env-3.11": PYTHON_ENVIRONMENT}
    assert taken.complete and {"train.py", "src/model.py", "config.yaml"} <= set(taken.files)
    # Not vacuous: what an unknown writer does to the person's files is still named.
    (root / "src" / "model.py").write_text("changed by a program the journal does not follow")
    (root / "src" / "native.h5").write_bytes(b"new")
    (root / "outputs").mkdir()
    (root / "outputs" / "made.bin").write_bytes(b"new folder, new file")
    assert named(taken, root) == [
        ("outputs/made.bin", "created"),
        ("src/model.py", "changed"),
        ("src/native.h5", "created"),
    ]


def test_past_the_bound_folders_are_not_taken_for_new_ones(tmp_path: Path) -> None:
    """12,000 data files, no venv: the bound is reached; the folders not listed are named
    as not checked, and none of their files reads as created."""
    root = project(tmp_path / "project")
    many_files(root / "data", 12_000, per_folder=3_000)
    taken = take(root, root / ".quickdev" / "runs")
    assert not taken.complete
    assert named(taken, root) == []
    assert set(left_out(taken, root).values()) == {manifest.PAST_BOUND}
    # The person's files were listed: the bound was not spent on the data first.
    assert {"train.py", "src/model.py"} <= set(taken.files)
    (root / "train.py").write_text("changed")
    assert named(taken, root) == [("train.py", "changed")]


def test_a_folder_too_big_for_the_bound_is_passed_over_and_the_rest_listed(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    many_files(root / "a_data", 11_000, per_folder=11_000)  # one folder past the bound alone
    project(root)
    taken = take(root, root / ".quickdev" / "runs")
    assert left_out(taken, root) == {"a_data/pkg0": manifest.PAST_BOUND}
    assert "src/model.py" in taken.files
    assert named(taken, root) == []


def test_installed_packages_are_left_out_by_name(tmp_path: Path) -> None:
    root = project(tmp_path / "project")
    many_files(root / "web" / "node_modules", 50)
    many_files(root / "vendor" / "site-packages", 50)
    taken = take(root, root / ".quickdev" / "runs")
    assert left_out(taken, root) == {
        "vendor/site-packages": INSTALLED_PACKAGES,
        "web/node_modules": INSTALLED_PACKAGES,
    }
    assert not any("node_modules" in p for p in taken.files)
    assert named(taken, root) == []


def test_bytecode_an_import_writes_during_the_job_is_not_named(tmp_path: Path) -> None:
    """Any import writes ``__pycache__`` (Quickdev's own processes too, where the project
    holds its source: a fresh clone's ``make demo`` named 16 .pyc files as not put back);
    the person's own edit beside it is still named."""
    root = project(tmp_path / "project")
    taken = take(root, root / ".quickdev" / "runs")
    (root / "src" / "__pycache__").mkdir()
    (root / "src" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0" * 16)
    (root / "config.yaml").write_text("lr: 0.2\n")
    assert named(taken, root) == [("config.yaml", "changed")]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_what_git_ignores_is_left_out_in_a_git_folder(tmp_path: Path) -> None:
    root = project(tmp_path / "project")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("cache/\n*.ckpt\n.venv/\n")
    many_files(root / "cache", 100)
    venv(root / ".venv", 10)
    (root / "src" / "last.ckpt").write_bytes(b"ignored one by one: still checked")
    taken = take(root, root / ".quickdev" / "runs")
    assert left_out(taken, root) == {".venv": PYTHON_ENVIRONMENT, "cache": IGNORED_BY_GIT}
    assert "src/last.ckpt" in taken.files
    # A job in a folder below the repository's top.
    sub = take(root / "src", root / ".quickdev" / "runs")
    assert "last.ckpt" in sub.files
    assert named(taken, root) == []


def test_a_manifest_of_an_earlier_version_takes_no_unlisted_folder_for_new(
    tmp_path: Path,
) -> None:
    """Recovery may read a manifest written before folders left out were recorded: past
    its bound it cannot tell a new folder from one it did not list, so it names none."""
    root = project(tmp_path / "project")
    many_files(root / "data", 30)
    path = tmp_path / "manifest.json"
    take(root, root / ".quickdev" / "runs", bound=3).write(path)
    data = json.loads(path.read_text())
    del data["unlisted"]
    path.write_text(json.dumps(data))
    earlier = Manifest.read(path)
    assert earlier is not None and not earlier.complete
    assert named(earlier, root) == []
