"""Two quick-dev jobs at once in one folder (a terminal run beside an editor run): the first
job to touch a file owns its original, the other defers to it, and whichever ends last
leaves every file as it was before the first began, through interleaved appends and
overwrites of the same files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.limits.journal.test_writers import snapshot

# Each job follows a plan of steps; "wait" and "signal" order the two jobs' steps through
# files in a folder outside the user's.
PLAN = """
import json, sys, time
from pathlib import Path
steps, signals = json.loads(sys.argv[1]), Path(sys.argv[2])
for step, name, text in steps:
    if step == "wait":
        deadline = time.monotonic() + 90
        while not (signals / name).exists():
            assert time.monotonic() < deadline, name
            time.sleep(0.05)
    elif step == "signal":
        (signals / name).touch()
    elif step == "append":
        with open(name, "a") as f:
            f.write(text)
    elif step == "write":
        Path(name).write_text(text)
    elif step == "expect":
        assert Path(name).read_text() == text, (name, Path(name).read_text(), text)
print("plan done", flush=True)
"""

# The case: both jobs append to one log, B saves a checkpoint, A ends while B runs.
APPENDS = {
    "a": [
        ["append", "train.log", "a1\n"], ["signal", "a1", ""],
        ["wait", "b1", ""], ["append", "train.log", "a2\n"],
    ],
    "b": [
        ["wait", "a1", ""], ["append", "train.log", "b1\n"],
        ["write", "model.pt", "b's checkpoint"], ["signal", "b1", ""],
        ["wait", "a-done", ""], ["append", "train.log", "b2\n"],
        ["expect", "train.log", "epoch 1\na1\nb1\na2\nb2\n"],
        ["expect", "model.pt", "b's checkpoint"],
    ],
}  # fmt: skip


def interleaved(first_to_end: str) -> dict[str, list[list[str]]]:
    """B truncates the log A appended to first (an append keeps only the original's length,
    no copy), and each overwrites the checkpoint the other saved; ``first_to_end`` ends
    while the other still runs and reads its own writes."""
    a = [
        ["append", "train.log", "a1\n"],
        ["signal", "a1", ""],
        ["wait", "b1", ""],
        ["write", "model.pt", "a's checkpoint"],
        ["append", "train.log", "a2\n"],
        ["signal", "a2", ""],
        ["wait", "b2", ""],
        *([["wait", "b-done", ""]] if first_to_end == "b" else []),
        ["append", "train.log", "a3\n"],
        ["expect", "train.log", "b rewrote it\na3\n"],
    ]
    b = [
        ["wait", "a1", ""],
        ["append", "train.log", "b1\n"],
        ["write", "model.pt", "b's checkpoint"],
        ["signal", "b1", ""],
        ["wait", "a2", ""],
        ["write", "train.log", "b rewrote it\n"],
        ["signal", "b2", ""],
        *([["wait", "a-done", ""]] if first_to_end == "a" else []),
        ["expect", "model.pt", "a's checkpoint"],
        ["append", "notes.txt", "b was here\n"],
    ]
    return {"a": a, "b": b}


def _start(root: Path, me: str, steps: list[list[str]], signals: Path) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "quickdev", "run", "--name", me, "plan.py", "--"]
    return subprocess.Popen(
        [*command, json.dumps(steps), str(signals)],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("plans", "first_to_end"),
    [(APPENDS, "a"), (interleaved("a"), "a"), (interleaved("b"), "b")],
    ids=["appends-a-ends-first", "interleaved-a-ends-first", "interleaved-b-ends-first"],
)
def test_two_jobs_at_once_leave_every_file_as_before_the_first_began(
    tmp_path: Path, plans: dict[str, list[list[str]]], first_to_end: str
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.log").write_text("epoch 1\n")
    (root / "model.pt").write_text("the user's checkpoint")
    (root / "notes.txt").write_text("notes\n")
    (root / "plan.py").write_text(PLAN)
    signals = tmp_path / "signals"  # outside the user's folder
    signals.mkdir()
    before = snapshot(root)
    jobs = {me: _start(root, me, steps, signals) for me, steps in plans.items()}
    last = "b" if first_to_end == "a" else "a"
    for me in (first_to_end, last):
        out, err = jobs[me].communicate(timeout=180)
        assert jobs[me].returncode == 0, err
        assert "plan done" in out, err
        # Each says only what is true of its own run: nothing lost, nothing unrestorable.
        assert "not put back" not in err and "JournalError" not in err, err
        (signals / f"{me}-done").touch()
    assert snapshot(root) == before
