"""Writes the memory forecast's examples in docs/forecast.md from real runs.

Each example is a ``quickdev run --memory-forecast`` of ``examples/gpt_memory.py`` (a GPT
in nanoGPT's style) with the options it names; what the job prints about the forecast
goes between the example's markers in the page, under the command that printed it:

    <!-- forecast example: NAME -->
    ...
    <!-- /forecast example -->

``make docs-forecast`` runs every example (minutes: each runs the script's real first
step on this machine); ``--check`` says which examples the page no longer matches,
``--only NAME`` runs one.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "forecast.md"
SCRIPT = "examples/gpt_memory.py"  # nanoGPT's Shakespeare character model by default


@dataclass(frozen=True)
class Example:
    name: str
    options: list[str]  # quickdev's
    args: list[str]  # the script's

    def command(self) -> list[str]:
        after = ["--", *self.args] if self.args else []
        return ["quickdev", "run", *self.options, SCRIPT, *after]


EXAMPLES = [
    # As configured: batch 64, bfloat16 autocast; the default devices.
    Example("baby-gpt", ["--max-steps", "1", "--memory-forecast"], []),
    # The same in float32 at batch 128 on a 4 GB GPU: the advice, each part replayed.
    Example(
        "baby-gpt-float32",
        ["--max-steps", "1", "--memory-forecast", "4"],
        ["--batch-size", "128", "--float32"],
    ),
    # The first remedy advised, made: the script checkpoints its blocks (its --checkpoint).
    Example(
        "baby-gpt-float32-checkpointed",
        ["--max-steps", "1", "--memory-forecast", "4"],
        ["--batch-size", "128", "--float32", "--checkpoint"],
    ),
]


def printed(example: Example) -> str:
    """The forecast's lines of the job's summary, as a terminal shows them."""
    with tempfile.TemporaryDirectory(prefix="quickdev-forecast-example-") as runs:
        command = [sys.executable, "-m", "quickdev", "run", "--runs-dir", runs]
        command += example.command()[2:]
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"{example.name}: quickdev run failed:\n{done.stdout}{done.stderr}")
    lines = done.stderr.splitlines()  # the job's summary: a terminal's stderr
    start = next(i for i, line in enumerate(lines) if line.startswith("  memory forecast:"))
    end = start + 1
    while end < len(lines) and lines[end].startswith("    "):
        end += 1
    return "\n".join(lines[start:end])


def block(example: Example, output: str) -> str:
    return f"```console\n$ {' '.join(example.command())}\n{output}\n```"


def _marked(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- forecast example: {re.escape(name)} -->\n)((?:(?!<!--).)*?)"
        r"(\n<!-- /forecast example -->)",
        re.DOTALL,
    )


def current(page: str, name: str) -> str | None:
    found = _marked(name).search(page)
    return found.group(2) if found else None


def replaced(page: str, name: str, text: str) -> str:
    found = _marked(name).search(page)
    assert found is not None
    return page[: found.start(2)] + text + page[found.end(2) :]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--only", choices=[e.name for e in EXAMPLES])
    options = parser.parse_args()
    page = PAGE.read_text(encoding="utf-8")
    stale = []
    for example in EXAMPLES:
        if options.only and example.name != options.only:
            continue
        if current(page, example.name) is None:
            raise SystemExit(f"{PAGE}: no markers for the example {example.name!r}")
        made = block(example, printed(example))
        if current(page, example.name) != made:
            stale.append(example.name)
            page = replaced(page, example.name, made)
    if options.check:
        if stale:
            raise SystemExit(f"docs/forecast.md is not what the tool prints: {', '.join(stale)}")
        return
    PAGE.write_text(page, encoding="utf-8")
    print(f"docs/forecast.md: {len(stale)} example(s) rewritten")


if __name__ == "__main__":
    main()
