"""The profiler, data-wait share, cProfile and sampler on a real training loop."""

from __future__ import annotations

import gzip
import json
import pstats
import re
from pathlib import Path
from typing import Any

from quickdev.options import ProfileOptions
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

# torch-tb-profiler finds traces by this name: <worker>.<ns>.pt.trace.json.gz
TRACE_NAME = re.compile(r"^.+\.\d+\.pt\.trace\.json\.gz$")


def load_trace(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def event_names(trace: dict[str, Any]) -> set[str]:
    return {e.get("name", "") for e in trace["traceEvents"]}


def test_default_schedule_writes_one_trace_of_the_second_step(run_job) -> None:  # type: ignore[no-untyped-def]
    job = run_job(steps=4, profile=ProfileOptions())
    traces = sorted(job.run_dir.glob("*.pt.trace.json.gz"))
    assert len(traces) == 1
    assert TRACE_NAME.match(traces[0].name)
    assert traces[0].parent == job.run_dir
    assert not list(job.run_dir.glob("*.partial")), "temporary files left behind"
    names = event_names(load_trace(traces[0]))
    # warmup=1, active=1: the recorded step is the second one.
    assert "ProfilerStep#1" in names
    assert "ProfilerStep#0" not in names
    assert "aten::addmm" in names

    profile = job.result.profile
    assert profile is not None
    assert profile.trace_files == [traces[0].name]
    top = [op["name"] for op in profile.top_ops]
    assert top and all(op["self_cpu_ms"] >= 0 for op in profile.top_ops)
    assert any(name.startswith("aten::") for name in top)
    # Operators only: no Python frames (with_stack) and no profiler step ranges.
    assert not [n for n in top if re.search(r"\(\d+\): |^<built-in|^ProfilerStep", n)]
    costs = [op["self_cpu_ms"] + op["self_device_ms"] for op in profile.top_ops]
    assert costs == sorted(costs, reverse=True)
    assert 0.0 <= profile.data_wait_share < 1.0


def test_repeat_writes_one_trace_per_cycle(run_job) -> None:  # type: ignore[no-untyped-def]
    job = run_job(steps=6, profile=ProfileOptions(wait=0, warmup=1, active=1, repeat=2))
    assert len(job.result.profile.trace_files) == 2
    for name in job.result.profile.trace_files:
        assert (job.run_dir / name).is_file()


def test_slow_input_pipeline_gets_a_high_share_and_advice(run_job) -> None:  # type: ignore[no-untyped-def]
    job = run_job(steps=3, profile=ProfileOptions(), item_delay_s=0.01)
    profile = job.result.profile
    assert profile.data_wait_share > 0.5
    assert profile.advice is not None
    assert "train.py:12" in profile.advice
    assert "num_workers" in profile.advice


def test_fast_input_pipeline_gets_no_advice(run_job) -> None:  # type: ignore[no-untyped-def]
    job = run_job(steps=3, profile=ProfileOptions())
    assert job.result.profile.advice is None


def test_job_ending_in_warmup_still_writes_a_trace(run_job) -> None:  # type: ignore[no-untyped-def]
    job = run_job(steps=0, profile=ProfileOptions(wait=0, warmup=1, active=1))
    traces = list(job.run_dir.glob("*.pt.trace.json.gz"))
    assert len(traces) == 1
    assert "traceEvents" in load_trace(traces[0])
    assert job.result.profile.trace_files == [traces[0].name]


def test_job_ending_while_waiting_still_writes_a_trace(run_job) -> None:  # type: ignore[no-untyped-def]
    job = run_job(steps=2, profile=ProfileOptions(wait=5, warmup=1, active=2))
    traces = list(job.run_dir.glob("*.pt.trace.json.gz"))
    assert len(traces) == 1
    assert "traceEvents" in load_trace(traces[0])


def test_py_profile_writes_cprofile_stats(run_job) -> None:  # type: ignore[no-untyped-def]
    job = run_job(steps=2, profile=ProfileOptions(py_profile=True))
    name = job.result.profile.py_profile
    assert name is not None
    stats = pstats.Stats(str(job.run_dir / name))
    functions = {func for (_file, _line, func) in stats.stats}  # type: ignore[attr-defined]
    assert "train" in functions  # the training loop in conftest.py


def test_unprofiled_job_has_no_profile_section(run_job) -> None:  # type: ignore[no-untyped-def]
    job = run_job(steps=2, profile=None)
    assert job.result.profile is None
    assert not list(job.run_dir.glob("*.pt.trace.json*"))


def test_sampler_writes_cpu_and_memory_scalars(run_job) -> None:  # type: ignore[no-untyped-def]
    job = run_job(steps=3, profile=None, item_delay_s=0.005, sample_interval_s=0.02)
    events = list(job.run_dir.glob("events.out.tfevents.*"))
    assert len(events) == 1
    acc = EventAccumulator(str(job.run_dir))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"system/cpu_percent", "system/rss_mb"} <= tags
    rss = [s.value for s in acc.Scalars("system/rss_mb")]
    assert len(rss) >= 2  # one at the start, one at the end at least
    assert all(v > 10 for v in rss)  # a process with torch loaded uses far more than 10 MB


def test_sampling_off_writes_no_scalars(run_job) -> None:  # type: ignore[no-untyped-def]
    job = run_job(steps=1, profile=None, sample_interval_s=None)
    assert not list(job.run_dir.glob("events.out.tfevents.*"))


def test_a_job_without_training_steps_reports_no_data_wait(run_job) -> None:  # type: ignore[no-untyped-def]
    """A crash in the first step leaves a fetched batch and no step: not a slow pipeline."""
    job = run_job(steps=0, profile=ProfileOptions(), item_delay_s=0.01, fetch_without_step=True)
    assert job.result.profile.data_wait_share == 0.0
    assert job.result.profile.advice is None
