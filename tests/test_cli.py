"""The command line's usage errors: exit status 2 and one line on stderr naming the fix."""

import subprocess
import sys
from pathlib import Path

import pytest


def quickdev(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "quickdev", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run", "--bogus", "train.py"], "unrecognized arguments: --bogus"),
        (["run"], "missing SCRIPT"),
        (["run", "--batches", "0", "train.py"], "at least 1"),
        (["run", "--batches", "two", "train.py"], "whole number"),
        (["run", "--wait-for-client", "train.py"], "--wait-for-client needs --listen"),
        (["run", "--listen", "host:port", "train.py"], "[HOST:]PORT"),
        (
            ["run", "--memory-forecast", "24TB", "train.py"],
            "not a size in GB (24, 40GB; at most 512)",
        ),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: list[str], expected: str) -> None:
    proc = quickdev(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert expected in lines[0]
    assert proc.stdout == ""


def test_what_follows_the_script_is_the_scripts_as_with_python(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import sys\nprint('ARGV', sys.argv[1:])\n")
    proc = quickdev(
        "run", "--runs-dir", str(tmp_path / "runs"), str(script), "config/x.py", "--batches=9"
    )
    assert proc.returncode == 0, proc.stderr
    assert "ARGV ['config/x.py', '--batches=9']" in proc.stdout


@pytest.mark.parametrize(
    ("after_script", "argv"),
    [
        # The contract: the first `--` right after the script is quickdev's.
        (["--", "--lr", "1"], ["--lr", "1"]),
        # A `--` after it is the script's, as `python train.py -- --x` passes ['--', '--x'].
        (["--", "--", "--x"], ["--", "--x"]),
        # With no `--` first, everything after the script is the script's, as with python:
        # `python train.py --x -- --y` passes ['--x', '--', '--y'].
        (["--x", "--", "--y"], ["--x", "--", "--y"]),
        (["a", "--", "b", "--"], ["a", "--", "b", "--"]),
    ],
)
def test_a_standalone_double_dash_meant_for_the_script_is_passed_on(
    tmp_path: Path, after_script: list[str], argv: list[str]
) -> None:
    script = tmp_path / "train.py"
    script.write_text("import sys\nprint('ARGV', sys.argv[1:])\n")
    python = subprocess.run(
        [sys.executable, str(script), *argv], capture_output=True, text=True, check=True
    )
    assert f"ARGV {argv}" in python.stdout
    proc = quickdev("run", "--runs-dir", str(tmp_path / "runs"), str(script), *after_script)
    assert proc.returncode == 0, proc.stderr
    assert f"ARGV {argv}" in proc.stdout


def test_memory_forecast_before_the_script_leaves_the_script_the_script(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import sys\nprint('ARGV', sys.argv[1:])\n")
    proc = quickdev(
        "run", "--runs-dir", str(tmp_path / "runs"), "--memory-forecast", str(script), "--x"
    )
    assert proc.returncode == 0, proc.stderr
    assert "ARGV ['--x']" in proc.stdout
    # No training step: the summary says why there is no forecast, in one line.
    assert "memory forecast: none (no training step of the model ran" in proc.stderr
