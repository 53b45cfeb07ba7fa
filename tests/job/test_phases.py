"""Every phase of the script runs: a budget ends the training loop, then the script's
validation, test and final checkpoint run.

Seven common loop styles (``idioms/``), each printing only from its final phase (a line
starting ``FINAL:``), run with default flags as a new user would: the final line must
appear, training steps must have been taken (the check is not vacuous: a job ended before
the loop would print nothing and take none), the loop a budget ended is named, what the
final phase saved is kept in the run directory and the user's folder is as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.idioms import copy_idioms, run_idiom, tree


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_idioms(tmp_path_factory.mktemp("phases"))


def _line(path: Path, text: str) -> int:
    """The first line that starts (indentation aside) with ``text``."""
    lines = enumerate(path.read_text().splitlines(), 1)
    return next(n for n, line in lines if line.strip().startswith(text))


# script: the loop a budget ends (its file, its first line's text), the loop's role, the
# budget, its count, the file the final phase saves (None: it saves none).
STEPS = ("training", "loop_steps", 2)
EPOCH = ("epoch", "train_passes", 1)
STYLES = [
    ("range_loop.py", "range_loop.py", "for step in range", *STEPS, "final.pt"),
    ("iter_num_loop.py", "iter_num_loop.py", "while iter_num < max_iters", *STEPS, "ckpt.pt"),
    ("while_true_break.py", "while_true_break.py", "while True", *STEPS, None),
    ("minibatch_epochs.py", "minibatch_epochs.py", "for i in range(0, len", *STEPS, None),
    ("loader_epochs.py", "loader_epochs.py", "for epoch in", *EPOCH, "model_final.pt"),
    ("project_trainer.py", "project_lib/trainer.py", "while self", *EPOCH, "exported_model.pt"),
    ("try_finally_loop.py", "try_finally_loop.py", "for epoch in", *EPOCH, "last.pt"),
]


@pytest.mark.parametrize(
    ("script", "loop_file", "loop_text", "role", "budget", "count", "saved"),
    STYLES,
    ids=[style[0] for style in STYLES],
)
def test_the_final_phase_runs_after_the_training_loop_ends(
    run_quickdev: Any,
    project: Path,
    script: str,
    loop_file: str,
    loop_text: str,
    role: str,
    budget: str,
    count: int,
    saved: str | None,
) -> None:
    run = run_idiom(run_quickdev, project, script)
    result = run.result
    assert (result["status"], result["stop_reason"]) == ("passed", "completed"), result["error"]
    final = [line for line in run.stdout.splitlines() if line.startswith("FINAL:")]
    assert len(final) == 1, run.stdout
    assert result["optimizer_steps"] >= 2 and len(result["losses"]) >= 2  # it trained
    assert result["phases"]["training_steps"] == result["optimizer_steps"]
    ended = {
        (Path(e["file"]).relative_to(project).as_posix(), e["line"]): e
        for e in result["loops_ended"]
    }
    loop = ended[(loop_file, _line(project / loop_file, loop_text))]
    assert (loop["role"], loop["budget"], loop["count"]) == (role, budget, count)
    if saved is not None:  # nothing lost: the final phase's file is kept, the folder is not touched
        (output,) = [o for o in result["outputs"] if Path(o["requested"]).name == saved]
        assert output["change"] == "created" and Path(output["written"]).is_file()
        assert result["phases"]["files_saved"] >= 1


def test_a_loop_that_would_end_by_itself_is_not_reported(run_quickdev: Any, project: Path) -> None:
    """The check runs once a loop goes round again: the one-epoch loop around the training
    loop (its --epochs set to 1) ends by itself and is not listed as ended early."""
    run = run_idiom(run_quickdev, project, "word_lm.py")
    assert run.result["limits"]["one_epoch_options"] == ["--epochs"]
    assert [e["role"] for e in run.result["loops_ended"]] == ["training", "evaluation"]
    assert "test ppl" in run.stdout
    # The test pass runs on the best model loaded back whole: its forwards are the
    # model's too, and its evaluation loop ends after the budget as validation's did.
    assert run.result["loops_ended"][1]["times"] == 2
    assert run.result["phases"]["test_forwards"] == 40


def test_an_explicit_epochs_option_still_gives_its_epochs(run_quickdev: Any, project: Path) -> None:
    """Hand-made batches: each epoch's loop takes the loop-steps budget, as each pass over a
    DataLoader takes --batches, and the script's own --epochs 3 gives three epochs."""
    # Three epochs with their validations: three times a default run's work.
    run = run_idiom(
        run_quickdev, project, "word_lm.py", script_args=("--epochs", "3"), deadline_s=60
    )
    result = run.result
    assert (result["status"], result["optimizer_steps"]) == ("passed", 6)
    assert [f"epoch {n} valid" in run.stdout for n in (1, 2, 3)] == [True] * 3
    assert "test ppl" in run.stdout
    training = [e for e in result["loops_ended"] if e["role"] == "training"]
    assert [(e["count"], e["times"]) for e in training] == [(2, 3)]


def test_an_explicit_step_budget_ends_the_loop_gracefully_too(
    run_quickdev: Any, project: Path
) -> None:
    """``--max-steps N`` ends the loops after N steps and the script finishes (as Lightning's
    max_steps does), the DataLoader-fed loop included."""
    run = run_idiom(run_quickdev, project, "loader_epochs.py", "--max-steps", "1", "--batches", "5")
    result = run.result
    assert (result["status"], result["optimizer_steps"]) == ("passed", 1)
    assert "FINAL: test accuracy" in run.stdout
    roles = [(e["role"], e["budget"], e["count"]) for e in result["loops_ended"]]
    assert roles == [("training", "max_steps", 1), ("enclosing", "max_steps", 1)]
    train, _, _ = result["loaders"]
    # The step's batch and the one the loop took as it went round again, not 5.
    assert train["batches"] == 2


def test_an_evaluation_loop_ends_after_its_budget_and_the_script_uses_what_it_computed(
    run_quickdev: Any, project: Path
) -> None:
    run = run_idiom(run_quickdev, project, "iter_num_loop.py")
    result = run.result
    evaluation = [e for e in result["loops_ended"] if e["role"] == "evaluation"]
    assert [(e["budget"], e["count"], e["times"]) for e in evaluation] == [("eval_forwards", 20, 4)]
    # Two estimate_loss() calls of two splits, 20 forwards each: one during training, one
    # in the final phase.
    assert (result["phases"]["evaluation_forwards"], result["phases"]["test_forwards"]) == (40, 40)
    assert result["stop_advice"].startswith("eval_iters (default 200) at iter_num_loop.py:")


def test_a_script_run_as_a_module_gets_its_loops_ended_too(
    run_quickdev: Any, project: Path
) -> None:
    """``quickdev run -m``: the module comes through the import hook, as its sibling does."""
    before = tree(project)
    run = run_quickdev(
        "--runs-dir", str(project.parent / "runs"), "-m", "project_trainer", cwd=project
    )
    assert run.returncode == 0, run.stderr
    assert tree(project) == before
    assert run.result["status"] == "passed" and "FINAL:" in run.stdout
    assert [e["role"] for e in run.result["loops_ended"]] == ["epoch"]
