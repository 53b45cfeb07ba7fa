"""A failed run's error reads the same in the terminal's summary and in the editor."""

from __future__ import annotations

import os

from quickdev.job.terminal_summary import summarize
from quickdev.rundir.memory import GB, DeviceFit, MemoryForecast, ModuleMemory
from quickdev.rundir.result import ErrorInfo, JobResult, ProfileSummary
from quickdev.server.types import Failure

ERROR = ErrorInfo(
    type="RuntimeError",
    message="mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)\n  in layer fc\n",
    file="/project/train.py",
    line=17,
)


def test_the_terminal_shows_the_first_line_and_where() -> None:
    result = JobResult(id="r1", status="failed", script="/project/train.py", error=ERROR)
    error_lines = [line for line in summarize(result).splitlines() if "error:" in line]
    assert error_lines == [
        "  error: RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)"
        " at /project/train.py:17"
    ]


def test_the_editor_shows_the_whole_message_at_its_line() -> None:
    failure = Failure.of_error(ERROR)
    assert failure.message == (
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)\n  in layer fc"
    )
    assert (failure.file, failure.line) == ("/project/train.py", 17)


def test_each_loop_ended_early_is_one_line_in_the_terminal_and_the_editor() -> None:
    from quickdev.rundir.changes import changes
    from quickdev.rundir.result import EndedLoop, Phases

    result = JobResult(
        id="r2",
        status="passed",
        script="/project/train.py",
        cwd="/project",
        loops_ended=[
            EndedLoop("/project/train.py", 42, "training", "loop_steps", 2, "steps"),
            EndedLoop(
                "/project/lib/evaluate.py", 7, "evaluation", "eval_forwards", 20, "forwards", 3
            ),
            EndedLoop("/elsewhere/fit.py", 9, "epoch", "train_passes", 1, "passes"),
            EndedLoop(
                "/project/train.py",
                30,
                "enclosing",
                "loop_steps",
                1,
                "steps",
                around="/project/train.py:42",
            ),
            EndedLoop(
                "/project/run.py",
                5,
                "enclosing",
                "max_steps",
                2,
                "steps",
                around="/project/train.py:42",
            ),
            EndedLoop(
                "/venv/lib/python3.11/site-packages/diffusion/model.py",
                691,
                "sampling",
                "eval_forwards",
                20,
                "forwards",
                library=True,
            ),
        ],
        phases=Phases(training_steps=2, evaluation_forwards=60, test_forwards=20, files_saved=1),
    )
    expected = [
        "train.py:42 training loop ended after 2 steps (loop_steps)",
        "lib/evaluate.py:7 evaluation loop ended after 20 forwards, 3 times (eval_forwards): "
        "a figure it computes over all its forwards (a mean, an accuracy) covers these 20 only, "
        "and reads low where the script divides by the full count",
        "/elsewhere/fit.py:9 epoch loop ended after 1 pass (train_passes)",
        "train.py:30 loop around line 42 ended after 1 step (loop_steps)",
        "run.py:5 loop around train.py:42 ended after 2 steps (max_steps)",
        "diffusion/model.py:691 sampling loop (in a library the script calls) ended after 20 "
        "forwards (eval_forwards): what it generates is cut short, not what a full run makes",
    ]
    assert changes(result) == expected  # what the editor shows, in the terminal's words
    summary = summarize(result).splitlines()
    assert [line.strip() for line in summary if "ended after" in line] == expected
    assert "  evaluation forwards: 60 during training, 20 after it" in summary
    assert "stopped" not in "\n".join(summary)


def test_the_memory_forecast_reads_as_its_headline_categories_and_advice() -> None:
    forecast = MemoryForecast(
        peak=int(31.5 * GB),
        categories={
            "parameters": 2 * GB,
            "gradients": 2 * GB,
            "optimizer_state": 4 * GB,
            "activations": 20 * GB,
            "temporaries": 300 << 20,
        },
        peak_phase="backward",
        peak_module="transformer.h.3",
        batch_size=64,
        precision="float32 weights, autocast bfloat16",
        fits=[DeviceFit("24 GB", 24 * GB, False, 40), DeviceFit("40 GB", 40 * GB, True)],
        advice="Batch size 40 fits 24 GB.",
    )
    result = JobResult(id="r1", status="passed", memory_forecast=forecast)
    lines = summarize(result).splitlines()
    at = lines.index(
        "  memory forecast: ≈ 31.5 GB peak · fits 40 GB (at backward, in transformer.h.3)"
    )
    assert lines[at + 1] == (
        "    at the peak: parameters 2 GB, gradients 2 GB, optimizer state 4 GB, "
        "activations 20 GB, temporaries 300 MB; batch size 64, float32 weights, "
        "autocast bfloat16"
    )
    assert lines[at + 2] == "    Batch size 40 fits 24 GB."


def test_gradients_not_made_yet_at_a_peak_early_in_backward_are_said_in_full() -> None:
    """The peak at the start of backward: no gradient is made yet (they come as backward
    frees the activations): 0 MB at the peak is true, and their full size is said too."""
    forecast = MemoryForecast(
        peak=13 * GB,
        categories={"parameters": 474 << 20, "gradients": 0, "activations": 12 * GB},
        modules=[
            ModuleMemory("h.0", gradients=300 << 20),
            ModuleMemory("h.1", gradients=174 << 20),
        ],
        peak_phase="backward",
        batch_size=12,
        precision="float32 weights",
    )
    assert forecast.breakdown() == (
        "at the peak: parameters 474 MB, gradients 0.0 MB (474 MB once backward made them), "
        "activations 12 GB"
    )


def test_a_profiled_run_names_its_trace_and_how_to_open_it() -> None:
    result = JobResult(
        id="r1",
        status="passed",
        run_dir=os.path.join(os.getcwd(), ".quickdev", "runs", "r1"),
        profile=ProfileSummary(
            trace_files=["host_12.1700000000.pt.trace.json.gz"],
            top_ops=[{"name": "aten::addmm", "calls": 6, "self_cpu_ms": 1.234}],
        ),
    )
    lines = summarize(result).splitlines()
    at = lines.index(
        "  profile: host_12.1700000000.pt.trace.json.gz in the run dir; "
        "most self time: aten::addmm (1.23 ms CPU)"
    )
    assert lines[at + 1] == (
        "    open it: quickdev tensorboard --logdir .quickdev/runs (the PyTorch Profiler tab), "
        "or Open in TensorBoard on the run in VS Code"
    )
