"""A full-size step this CPU cannot afford: its arithmetic at a smaller batch from the same
DataLoader, the script's own full-size step checked on fake tensors, said first.

Each test runs ``quickdev run`` on a script of ``scripts/``. Whether a step is costly
depends on this machine and its load; the tests that need one to be costly give a bound
below any step's cost (``--step-seconds 1e-9``), and those that need one cheap give a step
of a few million FLOPs a bound of seconds, so that the decision never depends on the load.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils.data import DataLoader

from tests.support.cli import QuickdevRun
from tests.support.stand_in import cpu_stand_in

# The cost of a step on this CPU: on a GPU the script's own sizes run (docs/step-cost.md).
pytestmark = cpu_stand_in

SCRIPTS = Path(__file__).parent / "scripts"
COSTLY = ("--step-seconds", "1e-9")


def _run(
    run_quickdev: Any,
    tmp_path: Path,
    script: str,
    *args: str,
    timeout: float = 180,
    env: dict[str, str] | None = None,
) -> QuickdevRun:
    """``quickdev run --json ARGS SCRIPT`` on a copy of ``script`` in ``tmp_path/project``; a
    ``--`` in ``args`` passes what follows it to the script."""
    project = tmp_path / "project"
    project.mkdir(parents=True, exist_ok=True)
    shutil.copy(SCRIPTS / script, project / script)
    options, _, script_args = _split(args)
    run: QuickdevRun = run_quickdev(
        *options, script, *script_args, cwd=project, timeout=timeout, env=env
    )
    assert run.result is not None, run.stderr
    return run


def _split(args: tuple[str, ...]) -> tuple[list[str], str, list[str]]:
    if "--" not in args:
        return list(args), "", []
    at = args.index("--")
    return list(args[:at]), "--", list(args[at + 1 :])


def _log(run: QuickdevRun) -> str:
    return (run.run_dir / "job.log").read_text()


def _samples(run: QuickdevRun) -> list[list[int]]:
    """The sample indices of each step ``shrinks.py`` took."""
    found = re.findall(r"step on samples (\[[^]]*\])", run.stderr)
    return [ast.literal_eval(text) for text in found]


def _line_of(script: str, text: str) -> int:
    lines = (SCRIPTS / script).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def test_a_costly_step_computes_the_first_samples_of_each_batch_said_before_it_runs(
    run_quickdev: Any, tmp_path: Path
) -> None:
    run = _run(run_quickdev, tmp_path, "shrinks.py", *COSTLY)
    result = run.result
    assert result is not None
    assert (result["status"], result["optimizer_steps"], len(result["losses"])) == ("passed", 2, 2)
    train, evaluation = result["step_cost"]
    assert (train["batch_size"], train["unit"], train["checked"]) == (64, "step", "passed")
    assert (evaluation["batch_size"], evaluation["unit"]) == (128, "evaluation batch")
    small = train["computed_at"]
    assert 2 <= small <= 32
    assert train["flops"] > 0 and train["full_s"] > 0
    # Said first: on stderr before the step, in the words the result keeps.
    said = f"quickdev: {train['line']}"
    assert train["line"].startswith(f"batch 64 → {small} for arithmetic on this CPU (a full step ≈")
    assert "shapes, dtypes and devices checked at 64 on fake tensors (shrinks.py:" in train["line"]
    assert run.stderr.index(said) < run.stderr.index("step on samples")
    assert f"quickdev: {evaluation['line']}" in run.stderr
    # The same sampler, shuffle and order: each step's samples are the first of its batch.
    generator = torch.Generator().manual_seed(0)
    full = [
        b.tolist() for b in DataLoader(range(512), batch_size=64, shuffle=True, generator=generator)
    ]
    seen = _samples(run)
    assert seen == [full[0][:small], full[1][:small]]
    evaluated = re.findall(r"evaluated (\d+) samples", run.stderr)
    assert evaluated == [str(evaluation["computed_at"])] * 2
    # The loader's batches are reported as the script makes them.
    assert result["loaders"][0]["batch_signature"].startswith("[float32[64, 32] cpu")
    assert result["limits"]["step_seconds"] == 1e-9


def test_a_full_size_only_shape_bug_fails_the_job_at_the_users_line(
    run_quickdev: Any, tmp_path: Path
) -> None:
    """The first 128 sequences hold one of 60 tokens, longer than the model's 48 positions;
    their first 8 do not: only the full-size step fails, and the check finds it."""
    run = _run(run_quickdev, tmp_path, "sequence_length.py", *COSTLY)
    result = run.result
    assert result is not None
    assert (result["status"], run.returncode) == ("failed", 1)
    error = result["error"]
    assert error["type"] == "RuntimeError"
    assert "(60) must match the size of tensor b (48)" in error["message"]
    line = _line_of("sequence_length.py", "hidden = self.embed(tokens)")
    assert (Path(error["file"]).name, error["line"]) == ("sequence_length.py", line)
    assert [f["function"] for f in error["traceback"]][:1] == ["<module>"]
    assert "hidden = self.embed(tokens)" in run.stderr  # the traceback, as Python prints it
    (cost,) = result["step_cost"]
    assert (cost["checked"], cost["batch_size"], cost["computed_at"]) == ("failed", 128, 128)
    assert cost["line"] in run.stderr
    assert result["optimizer_steps"] == 0  # found before any arithmetic ran

    # Not vacuous: the same script at a batch of 8 (the first 8 samples) trains.
    small = _run(
        run_quickdev, tmp_path, "sequence_length.py", "--full-batch", "--", "--batch-size", "8"
    )
    assert small.result is not None and small.result["status"] == "passed", small.stderr


def test_a_batchnorm_fed_one_sample_fails_as_the_full_size_run_would(
    run_quickdev: Any, tmp_path: Path
) -> None:
    """Batches of 64 over 65 samples: the second holds one. Made smaller, the second batch is
    still that one sample (the first samples of each batch), and the real step fails at the
    user's line as the full-size one would; drop_last, applied at the full size, keeps it out."""
    run = _run(run_quickdev, tmp_path, "short_last_batch.py", *COSTLY)
    result = run.result
    assert result is not None
    (cost,) = result["step_cost"]
    assert cost["computed_at"] < cost["batch_size"] == 64  # the real steps ran smaller
    assert result["status"] == "failed"
    assert result["error"]["type"] == "ValueError"
    assert "Expected more than 1 value per channel when training" in result["error"]["message"]
    line = _line_of("short_last_batch.py", "loss = nn.functional.cross_entropy(model(x), y)")
    assert (Path(result["error"]["file"]).name, result["error"]["line"]) == (
        "short_last_batch.py",
        line,
    )
    assert result["optimizer_steps"] == 1

    dropped = _run(run_quickdev, tmp_path, "short_last_batch.py", *COSTLY, "--", "--drop-last")
    assert dropped.result is not None
    assert (dropped.result["status"], dropped.result["optimizer_steps"]) == ("passed", 1)


def test_code_that_works_only_at_the_scripts_batch_size_keeps_it(
    run_quickdev: Any, tmp_path: Path
) -> None:
    run = _run(run_quickdev, tmp_path, "hard_coded_batch.py", *COSTLY)
    result = run.result
    assert result is not None
    assert (result["status"], result["optimizer_steps"]) == ("passed", 2)
    (cost,) = result["step_cost"]
    assert cost["computed_at"] == cost["batch_size"] == 64
    line = _line_of("hard_coded_batch.py", "x.view(BATCH_SIZE, -1)")
    assert "the step fails where at 64 it does not (RuntimeError: " in cost["why"]
    assert f"at hard_coded_batch.py:{line})" in cost["why"]
    assert cost["line"].startswith("batch 64 kept (a full step ≈")
    assert f"quickdev: {cost['line']}" in run.stderr


def test_a_cheap_step_is_never_made_smaller(run_quickdev: Any, tmp_path: Path) -> None:
    # Default flags on a small model: known cheap without forking a check.
    run = _run(run_quickdev, tmp_path, "shrinks.py")
    result = run.result
    assert result is not None
    assert (result["status"], result["step_cost"]) == ("passed", [])
    assert result["limits"]["step_seconds"] == 5.0
    assert "step on samples" in run.stderr
    assert [len(samples) for samples in _samples(run)] == [64, 64]
    assert "step-cost probe" not in _log(run)

    # A step not known cheap without a look: its full-size step is counted on fake tensors,
    # found cheap, and computed as the script wrote it; a repeat run remembers it.
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}  # outside the project: kept
    conv = _run(run_quickdev, tmp_path, "small_conv.py", "--step-seconds", "1", env=cache)
    assert conv.result is not None
    assert (conv.result["status"], conv.result["step_cost"]) == ("passed", [])
    assert "trained on 16" in conv.stdout
    assert re.search(r"step cost: \S+small_conv.py:\d+ batch 16: step, \d+ FLOPs", _log(conv))
    again = _run(run_quickdev, tmp_path, "small_conv.py", "--step-seconds", "1", env=cache)
    assert again.result is not None and again.result["step_cost"] == []
    assert "kept: cheap as measured before" in _log(again)
    assert "step-cost probe" not in _log(again)


def test_a_step_is_priced_for_the_memory_it_writes_not_only_its_flops(
    run_quickdev: Any, tmp_path: Path
) -> None:
    """A large batch's activations can cost a CPU more than its arithmetic: priced at this
    machine's measured rates, which the test sets (the cache of the measurement) so that the
    decision does not depend on this machine: the same FLOPs, memory written slowly or fast."""
    from quickdev.limits.step_cost import speed

    decided = {}
    for memory, rate in (("slow", 1e6), ("fast", 1e15)):
        cache = tmp_path / memory / "cache"
        measured = cache / "quickdev" / speed.CACHE_FILE
        measured.parent.mkdir(parents=True)
        rates = {"convolution": 1e10, "matmul": 1e10, "fresh_memory": rate, "reused_memory": 1e15}
        measured.write_text(json.dumps({speed.machine_key(): rates}))
        run = _run(
            run_quickdev, tmp_path / memory, "activations.py", env={"XDG_CACHE_HOME": str(cache)}
        )
        assert run.result is not None and run.result["status"] == "passed", run.stderr
        assert "trained on" in run.stdout
        decided[memory] = (run.stdout.split("trained on")[1].split()[0], run.result["step_cost"])
    trained_on, (cost,) = decided["slow"]
    # The conv's 50 MB outputs and their gradients at 1 MB/s: minutes; its FLOPs: 0.2 s.
    assert (cost["batch_size"], cost["computed_at"], trained_on) == (64, 2, "2")
    assert cost["full_s"] > 100
    assert decided["fast"] == ("64", [])


def test_later_estimates_follow_what_the_jobs_first_real_step_took(
    run_quickdev: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first training step took far longer than its estimate (work fake tensors cannot
    see): the evaluation loader decided after it scales its estimate by as much (at most
    4x), and computes smaller where its counted estimate alone was under the bound."""
    from quickdev.limits.step_cost import speed
    from quickdev.limits.step_cost.flops import FlopCount

    cache = tmp_path / "cache"  # the job prices at the rates measured here
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    spec = importlib.util.spec_from_file_location("calibrated", SCRIPTS / "calibrated.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    with FakeTensorMode(allow_non_fake_inputs=True), FlopCount() as counted, torch.no_grad():
        script.build()(torch.empty(script.EVALUATION_BATCH, 3, 32, 32))
    evaluation_s = speed.measured_speed().seconds(counted.flops, 1.0, counted.written)
    bound = 2.5 * evaluation_s  # above the counted estimate, below four times it
    run = _run(
        run_quickdev,
        tmp_path,
        "calibrated.py",
        "--step-seconds",
        str(bound),
        env={"XDG_CACHE_HOME": str(cache)},
    )
    assert run.result is not None and run.result["status"] == "passed", run.stderr
    assert "later estimates x 4.00" in _log(run)
    (cost,) = run.result["step_cost"]
    assert (cost["batch_size"], cost["unit"]) == (256, "evaluation batch")
    assert cost["computed_at"] < 256 and cost["full_s"] == pytest.approx(4 * evaluation_s, rel=0.1)
    assert f"evaluated {cost['computed_at']}" in run.stdout


def test_hand_made_batches_keep_their_size_and_the_advice_names_the_scripts_option(
    run_quickdev: Any, tmp_path: Path
) -> None:
    run = _run(run_quickdev, tmp_path, "hand_made.py", *COSTLY)
    result = run.result
    assert result is not None
    assert (result["status"], result["loop_batches"]) == ("passed", 2)
    assert "batch 32" in run.stdout  # the script's own size
    (cost,) = result["step_cost"]
    assert (cost["batch_size"], cost["computed_at"], cost["measured"]) == (32, 32, True)
    line = _line_of("hand_made.py", 'parser.add_argument("--batch-size"')
    assert cost["line"].startswith("hand-made batches keep their size: a step at batch 32 took ")
    assert cost["line"].endswith(
        f"--batch-size (default 32) at hand_made.py:{line} sets it: pass -- --batch-size 8 "
        "(or the quickdev.batchSize setting) for a faster check"
    )
    assert f"quickdev: {cost['line']}" in run.stderr


def test_full_batch_keeps_every_batch_the_scripts_own(run_quickdev: Any, tmp_path: Path) -> None:
    run = _run(run_quickdev, tmp_path, "shrinks.py", *COSTLY, "--full-batch")
    result = run.result
    assert result is not None
    assert (result["status"], result["step_cost"], result["limits"]["step_seconds"]) == (
        "passed",
        [],
        None,
    )
    assert [len(samples) for samples in _samples(run)] == [64, 64]
    assert "step cost" not in _log(run)


def test_the_memory_forecast_of_a_smaller_batch_is_the_full_size_ones(
    run_quickdev: Any, tmp_path: Path
) -> None:
    smaller = _run(run_quickdev, tmp_path, "shrinks.py", *COSTLY, "--memory-forecast", "24")
    full = _run(run_quickdev, tmp_path, "shrinks.py", "--full-batch", "--memory-forecast", "24")
    assert smaller.result is not None and full.result is not None
    assert smaller.result["step_cost"][0]["computed_at"] < 64
    assert (
        "shapes, dtypes, devices and memory checked at 64" in smaller.result["step_cost"][0]["line"]
    )
    figures = ("batch_size", "peak", "reserved", "categories", "peak_phase", "loss", "fits")
    shrunk, kept = smaller.result["memory_forecast"], full.result["memory_forecast"]
    assert shrunk["error"] is None, shrunk["error"]
    assert {k: shrunk[k] for k in figures} == {k: kept[k] for k in figures}
    assert shrunk["batch_size"] == 64


def test_a_lightning_module_with_large_batches_trains_and_validates_smaller(
    run_quickdev: Any, tmp_path: Path
) -> None:
    pytest.importorskip("lightning")
    run = _run(run_quickdev, tmp_path, "lightning_module.py", *COSTLY, timeout=300)
    result = run.result
    assert result is not None
    assert (result["status"], result["optimizer_steps"]) == ("passed", 2), run.stderr
    sizes = {c["batch_size"]: c for c in result["step_cost"]}
    assert set(sizes) == {512, 1024}
    assert (sizes[512]["unit"], sizes[1024]["unit"]) == ("step", "evaluation batch")
    trained = re.findall(r"training on (\d+)", run.stderr)
    validated = re.findall(r"validating on (\d+)", run.stderr)
    assert trained == [str(sizes[512]["computed_at"])] * 2
    assert validated and set(validated) == {str(sizes[1024]["computed_at"])}
