"""Which file ``python -m`` runs for a module name, and which files run only that way: on disk,
with nothing imported (the server must never run the user's package code)."""

from __future__ import annotations

from pathlib import Path

from quickdev.analysis.module_files import module_entry, module_file

TRAIN = "import torch\nfrom .model import Net\n\nif __name__ == '__main__':\n    Net()\n"


def package(root: Path, *files: str) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("raise SystemExit('imported')\n" if name.endswith("__init__.py") else "")


def test_a_module_name_finds_its_file_or_its_package_main(tmp_path: Path) -> None:
    package(tmp_path, "pkg/__init__.py", "pkg/train.py", "tool/__main__.py")
    assert module_file("pkg.train", tmp_path) == tmp_path / "pkg" / "train.py"
    assert module_file("tool", tmp_path) == tmp_path / "tool" / "__main__.py"
    assert module_file("pkg.missing", tmp_path) is None
    assert module_file("../etc", tmp_path) is None


def test_a_package_file_importing_its_package_runs_as_a_module_from_the_top_package_s_parent(
    tmp_path: Path,
) -> None:
    package(tmp_path, "src/proj/__init__.py", "src/proj/training/__init__.py")
    train = tmp_path / "src" / "proj" / "training" / "train.py"
    assert module_entry(train, TRAIN) == ("proj.training.train", tmp_path / "src")
    by_name = "from proj.data import loaders\n"
    assert module_entry(train, by_name) == ("proj.training.train", tmp_path / "src")
    main = tmp_path / "src" / "proj" / "__main__.py"
    assert module_entry(main, TRAIN) == ("proj", tmp_path / "src")


def test_a_file_that_runs_as_a_script_is_left_a_script(tmp_path: Path) -> None:
    package(tmp_path, "scripts/__init__.py")
    # Outside a package, or in one but importing only its siblings or libraries.
    assert module_entry(tmp_path / "train.py", TRAIN) is None
    in_package = tmp_path / "scripts" / "train.py"
    assert module_entry(in_package, "import torch\nimport model\n") is None
    assert module_entry(in_package, "import scriptsx\n# from . import nothing\n") is None
