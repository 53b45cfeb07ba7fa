"""The step-cost check's parts, in this process: the smaller batches a loader hands out, the
size chosen, FLOPs counted, this CPU's speed and its cache, what fake tensors are helped
with, the bound each kind of job gets, and the line the result shows."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from quickdev.limits import work_clock
from quickdev.limits.step_cost import estimate, smaller, speed
from quickdev.limits.step_cost.fake_values import FakeValues, fake_limitation, real_retry
from quickdev.limits.step_cost.flops import FRESH_BYTES, FlopCount
from quickdev.limits.step_cost.hand_made import knob_advice
from quickdev.options import RunOptions, step_cost_bound
from quickdev.rundir.changes import changes
from quickdev.rundir.option_table import BY_NAME, STEP_SECONDS
from quickdev.rundir.result import JobResult, LoaderStats
from quickdev.rundir.step_cost import StepCost
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils.data import DataLoader, Dataset, IterableDataset


class _Numbers(Dataset[int]):
    def __len__(self) -> int:
        return 10

    def __getitem__(self, index: int) -> int:
        return index


def test_a_smaller_loader_hands_out_the_first_samples_of_each_of_its_batches() -> None:
    loader = DataLoader(_Numbers(), batch_size=4)
    iterator = iter(loader)
    indices = smaller.watch(iterator)
    assert indices is not None and smaller.why_not(loader, iterator) is None
    indices.peek = 2  # a first look: the batch's first samples only, once
    assert next(iterator).tolist() == [0, 1]
    assert (indices.last, indices.peeked) == ([0, 1, 2, 3], True)
    stats = LoaderStats(origin="train.py:1")
    assert smaller.fetch(iterator, indices.last, stats).tolist() == [0, 1, 2, 3]
    assert stats.data_wait_s > 0
    indices.keep = 2
    # The sampler goes on by whole batches; the last, short one stays short.
    assert [b.tolist() for b in iterator] == [[4, 5], [8, 9]]


class _Augmented(Dataset[torch.Tensor]):
    """Each sample drawn from the global generator, as a random crop is."""

    def __len__(self) -> int:
        return 16

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.rand(3) + index


def test_first_looks_leave_the_batchs_random_draws_as_the_loader_makes_them() -> None:
    torch.manual_seed(0)
    plain = next(iter(DataLoader(_Augmented(), batch_size=8)))
    torch.manual_seed(0)
    iterator = iter(DataLoader(_Augmented(), batch_size=8))
    indices = smaller.watch(iterator)
    assert indices is not None
    indices.peek = smaller.PEEK
    first = smaller.FirstBatch(iterator, LoaderStats(origin="t.py:1"), next(iterator))
    assert first.size == 8 and first.shapes() is not None  # two looks, four draws
    assert torch.equal(first.whole(), plain)


def test_a_whole_batchs_shapes_are_known_from_two_first_looks_where_they_tell() -> None:
    images = (torch.zeros(2, 3, 8, 8), torch.zeros(2, dtype=torch.long))
    known = smaller.full_size(images, images, 2, 256)
    assert known is not None
    stand_in = known.stand_in()
    assert [tuple(t.shape) for t in stand_in] == [(256, 3, 8, 8), (256,)]
    assert stand_in[0].dtype == torch.float32 and stand_in[0].untyped_storage().nbytes() == 4
    with FakeTensorMode():
        made = known.make()
    assert isinstance(made, tuple) and tuple(made[0].shape) == (256, 3, 8, 8)
    # Padded to the longest sequence: the shapes differ, the whole batch must be looked at.
    assert smaller.full_size(torch.zeros(2, 7), torch.zeros(2, 9), 2, 256) is None
    # A list of names is as long as its batch: not known from two samples.
    named = (torch.zeros(2), ["a", "b"]), (torch.zeros(2), ["c", "d"])
    assert smaller.full_size(*named, 2, 8) is None


def test_loaders_whose_batches_cannot_be_taken_apart_say_why() -> None:
    class Stream(IterableDataset[int]):
        def __iter__(self) -> Iterator[int]:
            return iter(range(8))

    streamed = DataLoader(Stream(), batch_size=4)
    assert "IterableDataset" in str(smaller.why_not(streamed, iter(streamed)))
    whole = DataLoader(_Numbers(), batch_size=None)
    assert "batch_size=None" in str(smaller.why_not(whole, iter(whole)))


@pytest.mark.parametrize(
    ("full", "full_s", "target_s", "size"),
    [
        (256, 40.0, 1.25, 8),  # the example: a full step of 40 s
        (64, 40.0, 1.25, 2),  # never below 2 (BatchNorm)
        (64, 6.0, 1.25, 8),
        (8, 1e9, 0.1, 2),
        (4, 10.0, 100.0, 2),  # never above half
    ],
)
def test_the_smaller_size_is_the_largest_power_of_two_that_fits(
    full: int, full_s: float, target_s: float, size: int
) -> None:
    assert estimate.smaller_size(full, full_s, target_s) == size


def test_flops_are_counted_with_torchs_formulas_also_on_fake_tensors() -> None:
    layer = nn.Linear(8, 4)
    counted = FlopCount()
    with counted:
        layer(torch.randn(2, 8))
    assert dict(counted.flops) == {"addmm": 2 * 2 * 8 * 4}
    with FakeTensorMode(allow_non_fake_inputs=True), FlopCount() as fake:
        nn.functional.conv2d(torch.empty(16, 3, 32, 32), torch.empty(8, 3, 3, 3), padding=1)
    assert dict(fake.flops) == {"convolution": 2 * 16 * 8 * 3 * 9 * 32 * 32}


def test_this_cpus_speed_is_measured_once_and_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = tmp_path / "quickdev" / speed.CACHE_FILE
    cache.parent.mkdir()
    # An older version's figures, without the memory rates: measured again.
    older = {"convolution": 1.0, "matmul": 1.0}
    cache.write_text(json.dumps({speed.machine_key(): older}))
    measured = speed.measured_speed()
    assert measured.convolution > 1e8 and measured.matmul > 1e8
    assert measured.fresh_memory > 1e7 and measured.reused_memory > 1e7
    cached = json.loads(cache.read_text())
    assert list(cached.values()) == [vars(measured)]

    def measure_again() -> speed.Speed:
        raise AssertionError("measured twice")

    monkeypatch.setattr(speed, "measure", measure_again)
    assert speed.measured_speed() == measured


def test_a_steps_seconds_follow_its_flops_and_the_cores_it_computes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(work_clock.os, "cpu_count", lambda: 2)
    assert (work_clock.cores(4), work_clock.cores(1)) == (2, 1)
    rate = speed.Speed(convolution=1e9, matmul=2e9, fresh_memory=1e9, reused_memory=4e9)
    flops = {"convolution_backward": 10**9, "convolution": 10**9, "mm": 4 * 10**9}
    assert rate.seconds(flops, cores=2) == pytest.approx((2 + 2) / 2)
    # The activations it writes count beside its arithmetic.
    written = {"fresh": 3 * 10**9, "reused": 4 * 10**9}
    assert rate.seconds(flops, cores=2, written=written) == pytest.approx((2 + 2 + 3 + 1) / 2)


def test_the_memory_a_step_writes_is_counted_by_whether_it_is_new_pages() -> None:
    """Above FRESH_BYTES a new tensor is new pages from the OS; an in-place operator and a
    smaller tensor write memory there already; a view writes nothing. On fake tensors, so
    that a batch of any size is counted without its memory."""
    large = FRESH_BYTES // 4 + 1024  # float32 elements just above the size
    with FakeTensorMode(allow_non_fake_inputs=True), FlopCount() as counted:
        activations = torch.empty(large)
        counted.written.clear()
        activations.relu()
        activations.relu_()
        activations.view(-1, 1024)
        activations[:1000].relu()
    assert dict(counted.written) == {"fresh": large * 4, "reused": large * 4 + 1000 * 4}


def test_the_work_clock_counts_work_not_waiting() -> None:
    started = work_clock.busy_seconds()
    time.sleep(0.3)  # a busy machine's wait: no work of this process
    slept = work_clock.busy_seconds() - started
    # Work until the clock has counted 0.2 s of it, however fast this machine's matmul
    # and however many its cores; a clock that missed work would reach the minute first.
    give_up = time.monotonic() + 60
    while work_clock.busy_seconds() - started < 0.2 and time.monotonic() < give_up:
        torch.ones(500, 500) @ torch.ones(500, 500)
    assert slept < 0.1 < work_clock.busy_seconds() - started


def test_a_small_model_is_known_cheap_without_a_look() -> None:
    rate = speed.Speed(convolution=1e10, matmul=1e10, fresh_memory=1e9, reused_memory=1e10)
    batch = (torch.zeros(64, 32), torch.zeros(64, dtype=torch.long))
    assert estimate.certainly_cheap(2_500, batch, rate, cores=1.0, bound_s=5.0)
    assert not estimate.certainly_cheap(25_000_000, batch, rate, cores=1.0, bound_s=5.0)
    assert not estimate.certainly_cheap(None, batch, rate, cores=1.0, bound_s=5.0)


def test_fake_tensors_get_made_up_values_and_deep_copies() -> None:
    values = FakeValues()
    with FakeTensorMode(allow_non_fake_inputs=True), values:
        loss = torch.randn(4, 3).sum()
        assert loss.item() == 0.0
        assert values.first is not None and values.first.startswith("tensor.item() at ")
        assert not bool(torch.isnan(loss))
        assert f"{loss:.2f}" == "0.00"
        import copy

        state = copy.deepcopy(torch.zeros(3, requires_grad=True))
        assert state.shape == (3,) and state.requires_grad


def test_what_fake_tensors_cannot_do_is_not_the_scripts_error() -> None:
    with FakeTensorMode(allow_non_fake_inputs=True):
        tensor = torch.randn(5)
        with pytest.raises(Exception) as raised:
            tensor[tensor > 0]  # a size that depends on values
    assert fake_limitation(raised.value) is not None
    assert fake_limitation(RuntimeError("mat1 and mat2 shapes cannot be multiplied")) is None


def test_a_fake_kernels_refusal_is_worded_as_the_real_one() -> None:
    with FakeTensorMode(allow_non_fake_inputs=True):
        a, b = torch.empty(8, 64), torch.empty(32, 10)
        with pytest.raises(RuntimeError) as raised:
            torch.mm(a, b)
        real = real_retry(torch.ops.aten.mm.default, (a, b), {}, raised.value)
    assert "mat1 and mat2 shapes cannot be multiplied (8x64 and 32x10)" in str(real)


def test_a_module_level_batch_size_is_the_knob_of_hand_made_batches(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\n\nbatch_size = 12\nblock_size = 64\n")
    assert knob_advice(script, 64) == (
        "batch_size (default 12) at train.py:3 sets it; a value such as 8 would make the check "
        "faster"
    )
    (tmp_path / "bare.py").write_text("import torch\n")
    assert knob_advice(tmp_path / "bare.py", 4) == (
        "a smaller batch (such as 2) would make the check faster"
    )


@pytest.mark.parametrize(
    ("options", "bound"),
    [
        (RunOptions(script="t.py"), BY_NAME[STEP_SECONDS].default),
        (RunOptions(script="t.py", full_batch=True), None),
        (RunOptions(script="t.py", limits={STEP_SECONDS: 2.0}, full_batch=True), None),
        (RunOptions(script="t.py", limits={STEP_SECONDS: 0.0}), None),
        (RunOptions(script="t.py", listen=("127.0.0.1", 0)), None),  # a debug job: as written
        (
            RunOptions(script="t.py", listen=("127.0.0.1", 0), limits={STEP_SECONDS: 3.0}),
            3.0,
        ),  # asked
        (RunOptions(script="t.py", find_nonfinite=True), None),
        (RunOptions(script="t.py", no_limits=True), None),
        (RunOptions(script="t.py", nproc=2, limits={STEP_SECONDS: 3.0}), None),
    ],
)
def test_which_jobs_compute_smaller_batches(options: RunOptions, bound: float | None) -> None:
    assert step_cost_bound(options) == bound


def test_the_result_page_and_the_terminal_say_what_was_made_smaller() -> None:
    line = (
        "batch 256 → 8 for arithmetic on this CPU (a full step ≈ 40 s); shapes, dtypes and "
        "devices checked at 256 on fake tensors (train.py:80)"
    )
    result = JobResult(id="r", step_cost=[StepCost("train.py:80", 256, 8, line=line)])
    assert line in changes(result)
    again: Any = JobResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.step_cost == result.step_cost
