"""docs/forecast.md shows what the tool prints: its examples come from real runs
(``make docs-forecast``), and one of them is run again here and compared."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import REPO

GENERATOR = REPO / "tools" / "forecast_examples.py"


def test_the_pages_first_example_is_what_the_tool_prints_for_its_command() -> None:
    done = subprocess.run(
        [sys.executable, str(GENERATOR), "--check", "--only", "baby-gpt"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr + done.stdout


def test_every_example_has_its_place_in_the_page() -> None:
    page = (REPO / "docs" / "forecast.md").read_text(encoding="utf-8")
    sys.path.insert(0, str(GENERATOR.parent))
    try:
        import forecast_examples
    finally:
        sys.path.remove(str(GENERATOR.parent))
    for example in forecast_examples.EXAMPLES:
        shown = forecast_examples.current(page, example.name)
        assert shown is not None, example.name
        assert shown.startswith(f"```console\n$ {' '.join(example.command())}\n  memory forecast: ")
