"""`make compat`: the smoke suite on every torch release of the tested range.

For each release: a venv of its own under .compat/venvs/, one per release and Python (kept
between runs; each holds a CUDA build of torch from PyPI, several GB), the project installed
into it as a user installs it (``pip install '.[profile]'``), then tools/compat/smoke.py
against it. Each row is recorded under .compat/results/; the table of every recorded row is
printed at the end.

    python tools/compat/compat.py                      every release of RELEASES
    python tools/compat/compat.py --torch 2.11.0       one release
    python tools/compat/compat.py --ref HEAD~3         install that commit instead of the tree
    python tools/compat/compat.py --prune              delete each venv once its row is recorded
    python tools/compat/compat.py --python python3.12  the venvs on another Python
    python tools/compat/compat.py --table              print the recorded rows only
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python_backend"))

from quickdev.torch_compat import TESTED_TORCH, release  # noqa: E402

CACHE = ROOT / ".compat"
VENVS = CACHE / "venvs"
RESULTS = CACHE / "results"

# The release of each minor version tested, with the torchvision built for it: the newest
# patch release of each minor of quickdev.torch_compat.TESTED_TORCH.
RELEASES = {
    "2.8.0": "0.23.0",
    "2.9.1": "0.24.1",
    "2.10.0": "0.25.0",
    "2.11.0": "0.26.0",
    "2.12.1": "0.27.1",
    "2.13.0": "0.28.0",
    "2.14.1": "0.29.1",
}


def tested_minors() -> list[tuple[int, int]]:
    (major, low), (_, high) = TESTED_TORCH
    return [(major, minor) for minor in range(low, high + 1)]


def pip(venv: Path, *args: str) -> None:
    # Releases as PyPI has them, as on a user's machine: a local wheel folder (pip's
    # find-links) may hold a CPU-only torch of the same version, which no torchvision
    # from PyPI matches.
    no_local = CACHE / "no-local-wheels"
    no_local.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *args],
        check=True,
        env={**os.environ, "PIP_FIND_LINKS": str(no_local)},
    )


def python_version(python: str) -> str:
    """``3.11`` for the interpreter ``python``."""
    code = "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"
    return subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def make_venv(torch: str, python: str) -> Path:
    """The release's venv with torch and torchvision, made once (the downloads are large)."""
    venv = VENVS / f"torch-{torch}-py{python_version(python)}"
    stamp = venv / ".torch-installed"
    if not stamp.exists():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        print(f"installing torch {torch} + torchvision {RELEASES[torch]} into {venv}", flush=True)
        pip(venv, "--no-cache-dir", f"torch=={torch}", f"torchvision=={RELEASES[torch]}")
        stamp.touch()
    return venv


def install_project(venv: Path, source: Path) -> None:
    """As a user would; reinstalled every time, since the version number does not move."""
    pip(venv, f"{source}[profile]")
    pip(venv, "--no-deps", "--force-reinstall", str(source))


def source_tree(ref: str | None, scratch: Path) -> Path:
    if ref is None:
        return ROOT
    tree = scratch / "source"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def commit(ref: str | None) -> str:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", ref or "HEAD"],
        capture_output=True,
        text=True,
    )
    # Only what `pip install .` takes counts: an edited test changes nothing installed.
    installed = ["python_backend", "pyproject.toml"]
    dirty = (
        ref is None
        and subprocess.run(
            ["git", "-C", str(ROOT), "diff", "--quiet", "HEAD", "--", *installed], check=False
        ).returncode
    )
    return out.stdout.strip() + ("+changes" if dirty else "")


def table() -> str:
    rows = [json.loads(p.read_text()) for p in RESULTS.glob("torch-*.json")]
    rows.sort(key=lambda r: (release(r["torch"]) or (0, 0), release(r["python"]) or (0, 0)))
    if not rows:
        return "no rows recorded yet"
    checks = list(dict.fromkeys(name for row in rows for name in row["checks"]))
    head = ["torch", "torchvision", "python", "source", *checks]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [row["torch"], row["torchvision"], row["python"], row.get("source", "")]
        for name in checks:
            check = row["checks"].get(name)
            cells.append("–" if check is None else "pass" if check["ok"] else "FAIL")
        lines.append("| " + " | ".join(cells) + " |")
    failures = [
        f"{row['torch']} {name}: {check['detail']}"
        for row in rows
        for name, check in row["checks"].items()
        if not check["ok"]
    ]
    return "\n".join([*lines, "", *failures])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", nargs="*", choices=sorted(RELEASES), default=list(RELEASES))
    parser.add_argument("--python", default="python3.11", help="the interpreter of the venvs")
    parser.add_argument("--ref", help="a git commit to install instead of the working tree")
    parser.add_argument("--prune", action="store_true", help="delete each venv after its row")
    parser.add_argument("--table", action="store_true", help="print the recorded rows only")
    parser.add_argument("--check", nargs="*", default=[], help="only these smoke checks")
    args = parser.parse_args()
    if args.table:
        print(table())
        return 0
    failed = False
    with tempfile.TemporaryDirectory(prefix="quickdev-compat-src-") as scratch:
        source = source_tree(args.ref, Path(scratch))
        for torch in args.torch:
            venv = make_venv(torch, args.python)
            installed = commit(args.ref)  # the row says what was installed, not what is now
            install_project(venv, source)
            row_file = RESULTS / f"{venv.name}.json"
            print(f"torch {torch}: smoke suite", flush=True)
            code = subprocess.run(
                [sys.executable, str(Path(__file__).parent / "smoke.py"), str(venv),
                 str(row_file), *args.check],
                check=False,
            ).returncode  # fmt: skip
            if row_file.exists():
                row = json.loads(row_file.read_text())
                row["source"] = installed
                row_file.write_text(json.dumps(row, indent=1) + "\n")
            failed = failed or code != 0
            if args.prune:
                shutil.rmtree(venv)
    print(table())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
