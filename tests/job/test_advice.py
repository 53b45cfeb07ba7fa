"""The advice names the script's knob for the loop that ran out the budget: after training,
the clock runs out in evaluation or sampling, where a training knob changes nothing."""

from __future__ import annotations

from pathlib import Path

from quickdev.job.advice import advice_for
from quickdev.job.target import ScriptTarget

SCRIPT = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=5000)
parser.add_argument("--eval-iters", type=int, default=200)
args = parser.parse_args()
"""


def _target(tmp_path: Path, source: str) -> ScriptTarget:
    script = tmp_path / "train.py"
    script.write_text(source)
    return ScriptTarget(str(script), [])


def test_a_timeout_while_training_names_the_step_knob(tmp_path: Path) -> None:
    advice = advice_for("timeout", _target(tmp_path, SCRIPT), 2)
    assert advice is not None and advice.startswith("--steps (default 5000)")


def test_a_timeout_after_training_names_no_training_knob(tmp_path: Path) -> None:
    advice = advice_for("timeout", _target(tmp_path, SCRIPT), 2, after_training=True)
    assert advice is not None and advice.startswith("--eval-iters (default 200)")
    without_eval_knob = SCRIPT.replace(
        'parser.add_argument("--eval-iters", type=int, default=200)', ""
    )
    target = _target(tmp_path, without_eval_knob)
    assert advice_for("timeout", target, 2, after_training=True) is None
