"""The hunt never fails silently, and writes it cannot follow are not failures.

In-place writes to a view made under ``no_grad`` (``nn.Embedding(padding_idx=...)``'s init,
weight init on a slice, an EMA update, ``copy_`` into a parameter's rows) are a class: torch
gives such a view no autograd node, and the hunt watched nodes by asking for one. A real
failure of the hunt's own is said once, reported as Quickdev's error, and the hunt goes on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from quickdev import problems
from quickdev.events import EventHub
from quickdev.limits import nonfinite, steps
from quickdev.limits.nonfinite import forward
from quickdev.limits.nonfinite.found import NonFiniteFound
from quickdev.limits.nonfinite.hunt import Hunt
from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder
from torch import nn

from tests.limits.nonfinite.test_planted_faults import SCRIPTS, line_of
from tests.support.budgets import make_budget
from tests.support.cli import QuickdevRun, quickdev_run


@pytest.fixture
def hunt() -> Iterator[Hunt]:
    problems.take()
    hub = EventHub()
    recorder = Recorder(hub, make_budget())
    patcher = Patcher()
    steps.install(patcher, recorder)
    installed = nonfinite.install(patcher, recorder, hub)
    try:
        yield installed
    finally:
        patcher.undo_all()
        problems.take()


def _padding_init() -> nn.Parameter:
    return nn.Embedding(10, 4, padding_idx=0).weight


def _minimal() -> nn.Parameter:
    w = nn.Parameter(torch.randn(10, 4))
    with torch.no_grad():
        w[0].fill_(0)
    return w


def _init_of_a_slice() -> nn.Parameter:
    w = nn.Parameter(torch.empty(10, 4))
    nn.init.zeros_(w)
    nn.init.trunc_normal_(w[2:6], std=0.02)  # init writes under no_grad
    return w


def _ema_update() -> nn.Parameter:
    w = nn.Parameter(torch.randn(10, 4))
    live = torch.randn(10, 4)
    with torch.no_grad():
        for row, new in zip(w, live, strict=True):  # rows: views made under no_grad
            row.mul_(0.9).add_(new, alpha=0.1)
        torch._foreach_lerp_(list(w[:3]), list(live[:3]), 0.5)
    return w


def _copy_into_rows() -> nn.Parameter:
    w = nn.Parameter(torch.randn(10, 4))
    with torch.no_grad():
        w[:5].copy_(torch.ones(5, 4))  # pretrained rows
        w.data[9].zero_()
    return w


WRITES: dict[str, Callable[[], nn.Parameter]] = {
    "Embedding padding_idx": _padding_init,
    "w[0].fill_ under no_grad": _minimal,
    "init of a slice": _init_of_a_slice,
    "EMA update of rows": _ema_update,
    "copy_ into rows": _copy_into_rows,
}


@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
def test_a_view_written_under_no_grad_is_not_a_failure(hunt: Hunt, write: str) -> None:
    weight = WRITES[write]()
    counts = torch.tensor([[1.0, 2.0], [0.0, 0.0]])  # the second row: nothing to average
    with pytest.raises(NonFiniteFound) as found:
        pooled = (weight[:2] * counts.sum(1, keepdim=True)).sum(1) / counts.sum(1)
        pooled.sum().backward()
    origin = found.value.origin
    # The hunt kept following: the division is the origin, on this line of this file.
    assert (origin.op, origin.cause, origin.reached) == (
        "torch.Tensor.div",
        "produced",
        "the loss",
    )
    assert origin.file == __file__
    assert [p for p in problems.take() if p.kind == "quickdev_error"] == []
    assert hunt.state.failures.count == 0


def test_a_failure_of_the_hunt_is_said_reported_and_the_hunt_goes_on(
    hunt: Hunt, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Planted: the hunt's check of one call raises. No real fault of this kind is known
    once views are followed, so the check itself is made to fail, for tensors of one
    shape only."""
    real = forward.all_finite

    def failing(t: torch.Tensor) -> bool:
        if tuple(t.shape) == (3, 7):
            raise RuntimeError("planted failure of the hunt's check")
        return real(t)

    x = torch.randn(3, 7, requires_grad=True)
    monkeypatch.setattr(forward, "all_finite", failing)
    y = x * 2  # the hunt cannot follow this call
    assert torch.equal(y, x.detach() * 2), "the user's call is not failed by the hunt"
    (reported,) = problems.take()
    assert (reported.kind, reported.feature) == ("quickdev_error", "the NaN hunt")
    assert reported.message.startswith("the NaN hunt could not follow torch.Tensor.mul at ")
    assert (reported.file, reported.line) == (__file__, _line_of("y = x * 2"))
    assert reported.detail == "RuntimeError: planted failure of the hunt's check"
    said = capfd.readouterr().err
    assert said.count("the NaN hunt could not follow") == 1
    assert "this is Quickdev's error, not your code's" in said
    # It goes on: a NaN made later is still traced to its origin, and a second failure is
    # not said again.
    failed = hunt.state.failures.count
    z = x * 3
    assert capfd.readouterr().err == ""
    assert hunt.state.failures.count == failed + 1
    with pytest.raises(NonFiniteFound) as found:
        rows = z[:2]  # another shape: followed
        torch.log(rows - rows.detach() - 1.0).sum().backward()
    assert found.value.origin.op == "torch.log"
    assert [p for p in problems.take() if p.kind == "quickdev_error"] == []


def _line_of(text: str) -> int:
    with open(__file__, encoding="utf-8") as source:
        lines = source.read().splitlines()
    (found,) = [i + 1 for i, line in enumerate(lines) if line.strip().startswith(text)]
    return found


# --- the same, in a job run as a user runs it ------------------------------------------

PLANTED = SCRIPTS / "planted_hunt_failure.py"


def test_a_job_whose_hunt_failed_says_so_and_is_not_a_pass(tmp_path: Path) -> None:
    # As a person runs it in a terminal (the summary is printed without --json).
    runs = tmp_path / "runs"
    run = quickdev_run(
        "--find-nonfinite", "--runs-dir", str(runs), str(PLANTED), cwd=tmp_path, json_output=False
    )
    (run_dir,) = [d for d in runs.iterdir() if (d / "result.json").is_file()]
    result = json.loads((run_dir / "result.json").read_text())
    # The script trained to its end; the hunt's failure is Quickdev's: status error, exit 3.
    assert (result["status"], run.returncode, result["optimizer_steps"]) == ("error", 3, 20)
    assert result["first_nonfinite"] is None
    (problem,) = result["problems"]
    assert (problem["kind"], problem["feature"]) == ("quickdev_error", "the NaN hunt")
    linear = line_of(PLANTED, "error = (model(x) - y) ** 2")
    assert (problem["file"], problem["line"], problem["step"]) == (str(PLANTED), linear, 1)
    assert problem["message"].startswith(
        f"the NaN hunt could not follow torch.nn.functional.linear at {PLANTED.name}:{linear}"
    )
    assert problem["detail"] == "RuntimeError: planted failure of the NaN hunt's check"
    # One line while it runs, whose error it is; the summary says the same and agrees.
    said = run.stderr
    assert said.count("quickdev: the NaN hunt could not follow") == 1, said
    assert "this is Quickdev's error, not your code's" in said
    log = (run_dir / "job.log").read_text()
    assert "planted failure of the NaN hunt's check" in log
    summary = _summary(run)
    assert summary[0].startswith("quickdev: error ")
    assert summary[1].startswith("Quickdev's own error, not your code's: the NaN hunt could")
    (hunt_line,) = [line for line in summary if line.startswith("NaN hunt:")]
    assert hunt_line.endswith(
        "it could not follow every call (said above), and no NaN/Inf reached the loss, "
        "a gradient or a parameter in 20 steps"
    )


def test_after_its_own_failure_the_hunt_still_finds_a_nan(tmp_path: Path) -> None:
    run = quickdev_run(
        "--find-nonfinite",
        "--runs-dir",
        str(tmp_path / "runs"),
        str(PLANTED),
        "--nan-at",
        "12",
        cwd=tmp_path,
    )
    assert run.result is not None, run.stderr
    result = run.result
    # The script's NaN comes first (failed, exit 1); the hunt's failure is said beside it.
    assert (result["status"], run.returncode) == ("failed", 1)
    origin = result["first_nonfinite"]
    assert (origin["op"], origin["step"], origin["reached"]) == ("torch.log", 12, "the loss")
    assert origin["line"] == line_of(PLANTED, "error = error * torch.log(torch.zeros(16, 1))")
    assert ("quickdev_error", "the NaN hunt") in {
        (p["kind"], p["feature"]) for p in result["problems"]
    }


def _summary(run: QuickdevRun) -> list[str]:
    """The terminal's summary lines, from its status line on, stripped."""
    lines = (run.stdout + run.stderr).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("quickdev: error "))
    return [line.strip() for line in lines[start:]]
