"""The hunt installed in this process, as the job installs it: it lets go of what it held
when a training step ends, and undoing the limits takes all of it away."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
import torch
from quickdev.events import EventHub
from quickdev.limits import nonfinite, steps
from quickdev.limits.nonfinite.found import NonFiniteFound
from quickdev.limits.nonfinite.hunt import Hunt
from quickdev.limits.patching import Patcher
from quickdev.limits.recorder import Recorder
from torch import nn

from tests.support.budgets import make_budget


@pytest.fixture
def hunt() -> Iterator[Hunt]:
    hub = EventHub()
    recorder = Recorder(hub, make_budget())
    patcher = Patcher()
    steps.install(patcher, recorder)
    installed = nonfinite.install(patcher, recorder, hub)
    try:
        yield installed
    finally:
        patcher.undo_all()


class Scratchy(nn.Module):
    """Its forward keeps a local that autograd does not save: only a held frame keeps it."""

    def __init__(self, seen: list[weakref.ref[torch.Tensor]]) -> None:
        super().__init__()
        self.lin = nn.Linear(64, 1)
        self.seen = seen

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scratch = x + 1.0
        self.seen.append(weakref.ref(scratch))
        return self.lin(x).sum() + scratch.sum()


def test_a_steps_frames_are_let_go_when_it_ends(hunt: Hunt) -> None:
    seen: list[weakref.ref[torch.Tensor]] = []
    model = Scratchy(seen)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model(torch.randn(1024, 64))
        assert seen[-1]() is not None, "the forward's frame is held through its step"
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    del loss
    gc.collect()
    # Held for the debugger while its step ran (a NaN may be found in its backward), not
    # a step longer: a hunt over hundreds of steps must not keep their tensors.
    assert [ref() is None for ref in seen] == [True, True, True]
    assert hunt.recorder.steps == 3 and hunt.active


def test_while_installed_an_infinite_loss_ends_the_step(hunt: Hunt) -> None:
    assert torch._C._is_torch_function_mode_enabled()
    with pytest.raises(NonFiniteFound):
        model = nn.Linear(2, 1)
        (model(torch.ones(1, 2)) * float("inf")).sum().backward()


def test_after_undo_nothing_is_watched() -> None:
    hub = EventHub()
    recorder = Recorder(hub, make_budget())
    patcher = Patcher()
    nonfinite.install(patcher, recorder, hub)
    patcher.undo_all()
    assert not torch._C._is_torch_function_mode_enabled()
    model = nn.Linear(2, 1)
    (model(torch.ones(1, 2)) * float("inf")).sum().backward()  # no hunt: nothing raised
    assert recorder.first_nonfinite is None


def test_a_hand_written_norm_of_a_zero_vector_names_the_zero(hunt: Hunt) -> None:
    """``(d ** 2).sum() ** 0.5`` of a difference that is 0 (two equal embeddings): the
    backward of the power is infinite where its forward input was 0, and the message says
    that value, not only the gradients that came in."""
    model = nn.Linear(3, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 3)
    x[2] = x[1]
    with pytest.raises(NonFiniteFound) as found:
        embedded = model(x)
        distances = ((embedded[1:] - embedded[:-1]) ** 2).sum(dim=1) ** 0.5
        distances.mean().backward()
        optimizer.step()
    origin = found.value.origin
    assert origin.reached == "the gradient of weight"
    assert (origin.op, origin.phase, origin.cause) == (
        "torch.Tensor.__pow__",
        "backward",
        "produced",
    )
    kept = origin.forward["self"]
    assert kept.zeros == 1 and kept.shape == [3]
    assert ", where its forward self was 0 (1 of 3 values)" in origin.message
