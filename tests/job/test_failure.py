"""A failed script's traceback is printed where people look: its stderr and output.log."""

from __future__ import annotations

import subprocess
import sys
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


def test_a_syntax_error_shows_what_python_shows(run_quickdev: Any, tmp_path: Path) -> None:
    """The script does not compile: only its line and the error, as plain python prints
    them, not the frames of the job and of runpy that tried to run it."""
    script = tmp_path / "broken.py"
    script.write_text("import torch\n\nx = (\n")
    python = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert python.returncode == 1 and python.stderr.startswith("  File ")
    run = run_quickdev(str(script), cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith(python.stderr), run.stderr
    assert "quickdev" not in run.stderr.split("quickdev: failed")[0]
    error = run.result["error"]
    assert (error["type"], error["file"], error["line"], error["traceback"]) == (
        "SyntaxError",
        str(script),
        3,
        [],
    )


def test_a_binary_file_given_as_the_script_is_a_syntax_error_at_its_first_line(
    run_quickdev: Any, tmp_path: Path
) -> None:
    script = tmp_path / "weights.bin"
    script.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    run = run_quickdev(str(script), cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    shown = run.stderr.split("quickdev: failed")[0]
    assert shown.startswith(f'  File "{script}", line 1\n'), run.stderr
    assert "SyntaxError: " in shown and "null bytes" in shown
    assert "Traceback" not in shown and "quickdev" not in shown and "runpy" not in shown
    error = run.result["error"]
    assert (error["type"], error["file"], error["line"]) == ("SyntaxError", str(script), 1)


def test_a_syntax_error_the_script_raises_itself_keeps_its_frames(
    run_quickdev: Any, tmp_path: Path
) -> None:
    """compile() of bad text in the script: the script's own frames, as python shows."""
    script = tmp_path / "compiles.py"
    script.write_text("def build():\n    compile('x = (', '<config>', 'exec')\n\nbuild()\n")
    run = run_quickdev(str(script), cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert "Traceback (most recent call last):" in run.stderr
    assert f'File "{script}", line 4, in <module>' in run.stderr
    assert run.result["error"]["type"] == "SyntaxError"
