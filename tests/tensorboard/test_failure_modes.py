"""The plugin's known failure modes, on a real server and real traces.

No profile data yet; an empty or truncated trace file (what a reader sees while
a trace is being written, or after a crash); a run added after the server started.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from quickdev.tensorboard.manager import TensorBoardServer, ensure_tensorboard

from tests.support.tensorboard import PLUGIN, get_json, listed_runs, poll, profile_example


def views(server: TensorBoardServer, run: str) -> list[str]:
    found: list[str] = get_json(server.url + PLUGIN + f"views?run={run}")
    return found


def trace_of(runs_dir: Path) -> Path:
    (trace,) = runs_dir.glob("*/*.pt.trace.json.gz")
    return trace


def test_no_profile_data_yet_then_a_run_added_after_start(fresh_logdir: Path) -> None:
    server = ensure_tensorboard(fresh_logdir)
    listing = get_json(server.url + "data/plugins_listing")
    assert "pytorch_profiler" in listing
    assert get_json(server.url + PLUGIN + "runs") == {"runs": [], "loading": False}

    run_dir = profile_example(fresh_logdir, "late")
    run = run_dir.name
    poll("the run added after start to be listed", lambda: run in listed_runs(server))
    assert "Overview" in views(server, run)


def test_empty_and_truncated_traces_are_held_back_until_complete(
    fresh_logdir: Path, example_runs: Path
) -> None:
    real = trace_of(example_runs)
    data = real.read_bytes()
    server = ensure_tensorboard(fresh_logdir)
    broken = {"empty": b"", "truncated": data[: len(data) // 2]}
    for name, content in broken.items():
        (fresh_logdir / name).mkdir()
        (fresh_logdir / name / real.name).write_bytes(content)
    # A good run found in the same scan tells us the broken ones were looked at too.
    shutil.copytree(real.parent, fresh_logdir / "good")
    poll("the good run to be listed", lambda: "good" in listed_runs(server))
    poll("loading to finish", lambda: not get_json(server.url + PLUGIN + "runs")["loading"])
    assert listed_runs(server) == ["good"], "a run with no readable trace has no views to show"
    get_json(server.url + "data/environment")  # and the server still answers

    # The writer finishes: both runs appear, with their views.
    for name in broken:
        (fresh_logdir / name / real.name).write_bytes(data)
    poll(
        "completed traces to be loaded", lambda: {"empty", "truncated"} <= set(listed_runs(server))
    )
    for name in broken:
        assert "Overview" in views(server, name)
