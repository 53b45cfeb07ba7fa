"""Which loops a budget ends, and where the job stops the script instead (the Recorder and
the LoopEnder together, on rewritten user code; steps and forwards are simulated)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from quickdev.events import EventHub
from quickdev.limits.budget import StopJob
from quickdev.limits.loops import LoopEnder, LoopTables
from quickdev.limits.recorder import Recorder

from tests.limits.loops.test_transform import FILE, compile_user
from tests.support.budgets import make_budget


class Job:
    """A recorder with loop exits, and the user's code compiled with them. ``step()`` is a
    training step on hand-made batches (an optimizer step), ``forward()`` an evaluation
    forward."""

    def __init__(self, **budgets: float) -> None:
        self.tables = LoopTables()
        budget = make_budget(**budgets)
        budget.loops = LoopEnder(self.tables)
        self.recorder = Recorder(EventHub(), budget)

    def step(self) -> None:
        self.recorder.step_taken(self.recorder.train_step())

    def forward(self) -> None:
        self.recorder.eval_forward()

    def run(self, source: str, **names: Any) -> dict[str, Any]:
        namespace = {"step": self.step, "forward": self.forward, **names}
        exec(compile_user(source, self.tables), namespace)
        return namespace

    def ended(self) -> list[tuple[int, str, str, int, int]]:
        self.recorder.end()
        ended = self.recorder.budget.loops.ended
        return [(e.line, e.role, e.budget, e.count, e.times) for e in ended]


def test_a_training_loop_ends_after_its_steps_and_the_script_goes_on() -> None:
    job = Job(loop_steps=2)
    ns = job.run("for i in range(1000):\n    step()\nfinal = 'ran'\n")
    assert (ns["final"], job.recorder.steps) == ("ran", 2)
    assert job.ended() == [(1, "training", "loop_steps", 2, 1)]


def test_each_epoch_runs_its_loop_steps_and_the_epoch_loop_ends_after_its_epochs() -> None:
    job = Job(loop_steps=2, train_passes=3)
    job.run(
        "def train():\n"
        "    for i in range(100):\n"
        "        step()\n"
        "for epoch in range(10):\n"
        "    train()\n"
    )
    assert job.recorder.steps == 6
    assert job.ended() == [(2, "training", "loop_steps", 2, 3), (4, "epoch", "loop_steps", 3, 1)]


def test_a_step_budget_reached_in_a_comprehension_stops_the_script() -> None:
    job = Job(loop_steps=2)
    with pytest.raises(StopJob, match="loop_steps"):
        job.run("for epoch in range(3):\n    [step() for _ in range(100)]\n")
    assert job.recorder.steps == 2


def test_a_loop_that_cannot_be_ended_repeating_the_step_stops_the_script() -> None:
    """A library's loop (compiled as written) takes the steps inside the user's loop: the
    user's loop is told to end, the same line steps again, the job stops it."""
    library: dict[str, Any] = {}
    exec(
        compile(
            "def fit(step):\n    for _ in range(100):\n        step()\n", "/lib/fit.py", "exec"
        ),
        library,
    )
    job = Job(loop_steps=2)
    with pytest.raises(StopJob, match="loop_steps"):
        job.run("for epoch in range(3):\n    fit(step)\n", fit=library["fit"])
    assert job.recorder.steps == 3


def test_a_library_calling_the_users_training_loop_again_is_stopped_after_its_epochs() -> None:
    library: dict[str, Any] = {}
    exec(
        compile("def fit(epoch_fn):\n    while True:\n        epoch_fn()\n", "/lib/fit.py", "exec"),
        library,
    )
    job = Job(loop_steps=2, train_passes=1)
    with pytest.raises(StopJob, match="loop_steps"):
        job.run(
            "def one_epoch():\n    for i in range(100):\n        step()\nfit(one_epoch)\n",
            fit=library["fit"],
        )
    assert job.recorder.steps == 4


def test_max_steps_ends_every_loop_around_and_a_later_loop_after_one_step() -> None:
    job = Job(max_steps=3)
    ns = job.run(
        "for epoch in range(5):\n"
        "    for i in range(100):\n"
        "        step()\n"
        "for j in range(100):\n"
        "    step()\n"
        "done = True\n"
    )
    assert ns["done"] and job.recorder.steps == 4
    assert job.ended() == [
        (2, "training", "max_steps", 3, 1),
        (1, "enclosing", "max_steps", 3, 1),
        (4, "training", "max_steps", 1, 1),
    ]


ESTIMATE = """\
def estimate_loss(splits):
    out = {}
    for split in splits:
        total = 0
        for k in range(200):
            forward()
            total += 1
        out[split] = total
    return out
"""


def test_an_evaluation_loop_ends_after_its_forwards_and_returns_what_it_computed() -> None:
    job = Job(eval_forwards=20)
    ns = job.run(
        ESTIMATE + "first = estimate_loss(['train', 'val'])\nlater = estimate_loss(['val'])\n"
    )
    assert ns["first"] == {"train": 20, "val": 20} and ns["later"] == {"val": 20}
    # The second split's loop ended in the same frame: the loop around it is ended too
    # (it was at its last split here, so it ended by itself).
    assert job.ended() == [(5, "evaluation", "eval_forwards", 20, 3)]


def test_an_evaluation_loop_repeated_in_one_frame_ends_the_loop_around_it() -> None:
    job = Job(eval_forwards=20)
    ns = job.run(ESTIMATE + "out = estimate_loss(['a', 'b', 'c', 'd'])\n")
    assert ns["out"] == {"a": 20, "b": 20}
    assert job.ended() == [
        (5, "evaluation", "eval_forwards", 20, 2),
        (3, "enclosing", "eval_forwards", 20, 1),
    ]


def test_an_evaluation_loop_that_has_had_its_seconds_ends_after_its_least_forwards() -> None:
    """Full-size evaluation forwards are what a job spends its seconds on: a loop the job
    can end ends once its seconds are spent, each split's loop timed on its own."""
    job = Job(eval_forwards=20, eval_seconds=0.0, eval_at_least=2)
    ns = job.run(ESTIMATE + "out = estimate_loss(['train', 'val'])\n")
    assert ns["out"] == {"train": 2, "val": 2}
    assert job.ended() == [(5, "evaluation", "eval_forwards", 2, 2)]
    # A loop it cannot end (a comprehension) runs to the count, as without seconds.
    job = Job(eval_forwards=20, eval_seconds=0.0, eval_at_least=2)
    ns = job.run(
        "for epoch in range(1):\n    losses = [forward() for _ in range(12)]\nfinal = 'ran'\n"
    )
    assert (len(ns["losses"]), ns["final"]) == (12, "ran")


def test_evaluation_forwards_without_a_loop_to_end_stop_the_script_after_the_budget() -> None:
    job = Job(eval_forwards=20)
    with pytest.raises(StopJob, match="eval_forwards"):
        job.run("for epoch in range(3):\n    losses = [forward() for _ in range(200)]\n")
    # Python 3.11 runs the comprehension in a frame of its own: stopped at the forward
    # after the budget. 3.12 inlines it: the epoch loop around it is told to end, and the
    # forwards that go on past a second budget are stopped.
    expected = 21 if sys.version_info < (3, 12) else 41
    assert job.recorder.eval_forwards == expected


def test_a_forward_counted_as_a_test_forward_after_the_last_step() -> None:
    job = Job(loop_steps=2, eval_forwards=20)
    job.run("for i in range(100):\n    step()\n    forward()\nfor k in range(5):\n    forward()\n")
    phases = job.recorder.phases()
    assert (phases.training_steps, phases.evaluation_forwards, phases.test_forwards) == (2, 1, 6)


def test_a_function_whose_loops_were_ended_lets_go_of_its_objects_when_it_returns(
    tmp_path: Path,
) -> None:
    """The epoch loop and the loop in it end by the budget; when ``train`` returns, the
    log file it left open is closed (flushed) there, as without the job, and the script
    reads what it wrote."""
    job = Job(loop_steps=2, train_passes=1)
    ns = job.run(
        "def train(path):\n"
        "    log = open(path, 'w')\n"
        "    for epoch in range(10):\n"
        "        for i in range(100):\n"
        "            step()\n"
        "        log.write(f'epoch {epoch}\\n')\n"
        "train(LOG)\n"
        "logged = open(LOG).read()\n",
        LOG=str(tmp_path / "train.log"),
    )
    assert job.recorder.steps == 2
    assert ns["logged"] == "epoch 0\n"


def test_the_ended_loops_name_the_users_file() -> None:
    job = Job(loop_steps=1)
    job.run("for i in range(3):\n    step()\n")
    job.recorder.end()
    assert [e.file for e in job.recorder.budget.loops.ended] == [FILE]
