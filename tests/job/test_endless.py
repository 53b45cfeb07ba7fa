"""Endless trainers and the sampling after training, as the most copied generative code
writes them: each run with default flags ends by itself, ``passed``, and the code after its
loops (evaluation, sampling, the save) runs; nothing is left in the script's folder.

Each script under ``idioms/`` is a small copy of a public idiom (makemore, minGPT's Trainer,
lucidrains' ``cycle(dl)``, ``itertools.cycle``, denoising-diffusion's ``sample()``); each
ends with a ``FINAL:`` line that only a run whose loops were ended, not stopped, prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from quickdev.rundir.changes import changes
from quickdev.rundir.result import JobResult

from tests.support.idioms import copy_idioms, run_idiom
from tests.support.paths import REPO

LIBRARIES = REPO / "tests" / "job" / "libraries"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_idioms(tmp_path)


def _line(path: Path, text: str) -> int:
    lines = enumerate(path.read_text().splitlines(), 1)
    return next(n for n, line in lines if line.strip().startswith(text))


def _ended(result: dict[str, Any], project: Path) -> list[tuple[str, str, str, int]]:
    """(file:line, role, budget, count) of each loop ended, files relative to the project."""
    found = []
    for e in result["loops_ended"]:
        path = Path(e["file"])
        name = path.relative_to(project).as_posix() if path.is_relative_to(project) else path.name
        found.append((f"{name}:{e['line']}", e["role"], e["budget"], e["count"]))
    return found


def _changes(result: dict[str, Any]) -> str:
    """The summary's lines, as the terminal and the editor show them."""
    return "\n".join(changes(JobResult.from_dict(result)))


def _saved(result: dict[str, Any], name: str) -> None:
    """The final phase's file was written, and kept in the run directory."""
    (output,) = [o for o in result["outputs"] if Path(o["requested"]).name == name]
    assert output["change"] == "created" and Path(output["written"]).is_file()


def test_makemore_infinite_loader_loop_ends_and_the_script_goes_on(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "makemore_loop.py")
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("passed", "completed"), result["error"]
    # The loop re-iterated the loader in the iteration it was told to end after: that
    # batch trained and the `while True` ended at its head.
    train = result["loaders"][0]
    assert (train["passes"], train["batches"], result["optimizer_steps"]) == (2, 3, 3)
    line = _line(project / "makemore_loop.py", "while True")
    assert _ended(result, project) == [(f"makemore_loop.py:{line}", "training", "train_passes", 1)]
    assert "FINAL: 3 steps" in run.stdout and "(10, 16) sampled" in run.stdout
    _saved(result, "model.pt")
    assert f"makemore_loop.py:{line} training loop ended after 1 pass" in _changes(result)


def test_mingpt_trainer_in_the_project_ends_and_the_code_after_run_goes_on(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "mingpt_adder.py")
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("passed", "completed"), result["error"]
    line = _line(project / "mingpt_lib" / "trainer.py", "while True")
    assert _ended(result, project) == [
        (f"mingpt_lib/trainer.py:{line}", "training", "train_passes", 1)
    ]
    assert result["optimizer_steps"] == 3
    # The callback's evaluation at iteration 0 and the one after trainer.run() both ran.
    assert "iter 0: train score" in run.stdout and "FINAL: 3 iterations" in run.stdout
    _saved(result, "model.pt")


def test_cycled_loaders_end_their_loops_and_a_second_phase_trains_too(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "cycle_loaders.py")
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("passed", "completed"), result["error"]
    assert "PHASE 1: 2 steps" in run.stdout and "FINAL: 2 + 3 steps" in run.stdout
    script = project / "cycle_loaders.py"
    accumulate = _line(script, "for _ in range(gradient_accumulate_every)")
    outer = _line(script, "while step < train_num_steps")
    finetune = _line(script, "for _ in range(100_000)")
    assert _ended(result, project) == [
        (f"cycle_loaders.py:{accumulate}", "training", "train_passes", 1),
        (f"cycle_loaders.py:{outer}", "enclosing", "train_passes", 1),
        (f"cycle_loaders.py:{finetune}", "training", "train_passes", 1),
    ]
    assert f"cycle_loaders.py:{outer} loop around line {accumulate} ended" in _changes(result)
    _saved(result, "model.pt")


def test_a_librarys_sampling_loop_after_training_ends_and_the_samples_are_saved(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(
        run_quickdev, project, "diffusion_sample.py", env={"PYTHONPATH": str(LIBRARIES)}
    )
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("passed", "completed"), result["error"]
    assert "FINAL: sampled (4, 8)" in run.stdout
    _saved(result, "samples.pt")
    library = LIBRARIES / "tinydiffusion" / "__init__.py"
    loop = _line(library, "for t in tqdm(")
    ended = [e for e in result["loops_ended"] if e["role"] == "sampling"]
    assert [(e["file"], e["line"], e["count"], e["library"]) for e in ended] == [
        (str(library), loop, 20, True)
    ]
    # Every denoiser call after training was counted, and no more than the budget ran.
    assert result["phases"]["test_forwards"] == 20
    (line,) = [c for c in _changes(result).splitlines() if "sampling loop" in c]
    assert "(in a library the script calls) ended after 20 forwards (eval_forwards)" in line
    assert "cut short" in line and "a mean" not in line
