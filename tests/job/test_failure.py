"""A failed script's traceback is printed where people look: its stderr and output.log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quickdev.rundir.layout import STDOUT_FILE


def test_the_traceback_is_in_the_output_from_the_script_on(
    run_quickdev: Any, examples_dir: Path, tmp_path: Path
) -> None:
    run = run_quickdev(str(examples_dir / "crash_deep.py"), cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    output = (run.run_dir / STDOUT_FILE).read_text(encoding="utf-8")
    traceback = output[output.index("Traceback (most recent call last):") :]
    frames = [line.strip() for line in traceback.splitlines() if line.strip().startswith("File ")]
    # As `python crash_deep.py` prints it: the script first, the helper's line, torch last.
    assert str(examples_dir / "crash_deep.py") in frames[0]
    assert any(str(examples_dir / "crash_helpers.py") in frame for frame in frames)
    assert not any("quickdev" in frame or "runpy" in frame for frame in frames)
    assert "RuntimeError: " in traceback and "cannot be multiplied" in traceback
    # The terminal shows it too.
    assert traceback.strip() in run.stderr
