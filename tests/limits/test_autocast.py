"""CUDA autocast on a CPU runs in what is fast here, and never overrides a float32."""

from __future__ import annotations

import json
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from quickdev.limits.device import autocast
from quickdev.limits.device.engine import DeviceEngine
from quickdev.limits.patching import Patcher

from tests.support.autocast import FAST_BF16, SLOW_HALF
from tests.support.stand_in import cpu_stand_in


def test_the_choice_follows_the_measured_speeds_and_keeps_an_asked_float32() -> None:
    slow = autocast.choose(torch.float16, lambda: SLOW_HALF)
    assert slow.ran is None and "float32 is fastest on this CPU" in slow.why
    fast = autocast.choose(torch.float16, lambda: FAST_BF16)
    assert fast.ran == torch.bfloat16 and "bfloat16 1.80×" in fast.why
    # The dtype the script asked for, when it is fast too: its numerics are the script's.
    both = {"float32": 1.0, "bfloat16": 1.8, "float16": 1.6}
    assert autocast.choose(torch.float16, lambda: both).ran == torch.float16

    def never() -> dict[str, float]:
        raise AssertionError("a float32 region needs no measurement")

    asked = autocast.choose(torch.float32, never)
    assert (asked.ran, asked.why) == (None, "the script asked for float32")


@pytest.mark.parametrize(
    ("speeds", "dtype", "computed"),
    [
        (SLOW_HALF, torch.float16, torch.float32),
        (FAST_BF16, torch.float16, torch.bfloat16),
        (FAST_BF16, torch.float32, torch.float32),  # nanoGPT's --dtype=float32
    ],
)
def test_a_cuda_region_computes_in_the_chosen_dtype(
    speeds: dict[str, float], dtype: torch.dtype, computed: torch.dtype
) -> None:
    patcher = Patcher()
    engine = DeviceEngine("cpu", "cpu")
    autocast.install(patcher, engine, lambda: speeds)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "dtype not supported, disabling" warning
            with torch.autocast("cuda", dtype=dtype):
                assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == computed
        # The deprecated spelling (it warns so itself) is a subclass: the same choice.
        with pytest.warns(FutureWarning), torch.cuda.amp.autocast(dtype=dtype):
            assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == computed
    finally:
        patcher.undo_all()
    name = str(dtype).removeprefix("torch.")
    ran = str(computed).removeprefix("torch.")
    assert engine.report().remaps == {f"autocast cuda {name} -> cpu {ran}": 2}
    (reported,) = engine.report().autocast
    assert (reported["asked"], reported["ran"]) == (f"cuda {name}", ran)


def test_the_engine_knows_the_open_cuda_region_as_the_script_asked_it() -> None:
    """What a GPU computes in (the memory forecast replays it), even where this CPU
    computes the region in float32 with autocast off."""
    patcher = Patcher()
    engine = DeviceEngine("cpu", "cpu")
    autocast.install(patcher, engine, lambda: SLOW_HALF)
    try:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            assert not torch.is_autocast_enabled("cpu")
            assert engine.cuda_autocast() == torch.bfloat16
            with torch.autocast("cuda", enabled=False):
                assert engine.cuda_autocast() is None
            with torch.autocast("cuda", dtype=torch.float32):  # nanoGPT's --dtype=float32
                assert engine.cuda_autocast() is None
            assert engine.cuda_autocast() == torch.bfloat16
            with torch.autocast("cpu", dtype=torch.bfloat16):  # the script's own CPU region
                assert engine.cuda_autocast() == torch.bfloat16
        assert engine.cuda_autocast() is None

        @torch.autocast("cuda")  # as a decorator: float16, CUDA autocast's default
        def region() -> torch.dtype | None:
            return engine.cuda_autocast()

        assert region() == torch.float16 and engine.cuda_autocast() is None
    finally:
        patcher.undo_all()


def test_speeds_are_measured_once_per_machine_and_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = autocast.measured_speeds()
    assert first["float32"] == 1.0 and set(first) == {"float32", "bfloat16", "float16"}
    assert all(value > 0 for value in first.values())
    (key,) = json.loads((tmp_path / "quickdev" / autocast.CACHE_FILE).read_text())
    assert torch.__version__ in key

    def not_again() -> dict[str, float]:
        raise AssertionError("measured twice")

    monkeypatch.setattr(autocast, "_measure", not_again)
    assert autocast.measured_speeds() == first
    # Figures of another form under this machine's key (absolute speeds of an earlier
    # version, float32's not 1) are measured again, not read as ratios.
    path = tmp_path / "quickdev" / autocast.CACHE_FILE
    path.write_text(json.dumps({key: {"float32": 7.5, "bfloat16": 22.63, "float16": 2.36}}))
    monkeypatch.setattr(autocast, "_measure", lambda: first)
    assert autocast.measured_speeds() == first
    assert json.loads(path.read_text())[key] == first


SCRIPT = textwrap.dedent(
    """
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Linear(8, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(torch.ones(4, 8, device="cuda")).float().pow(2).mean()
        print("RANDOM", torch.rand(2).tolist(), flush=True)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    """
)


@cpu_stand_in
def test_measuring_inside_a_job_leaves_the_script_its_steps_losses_and_random_numbers(
    run_quickdev: Any, tmp_path: Path
) -> None:
    """The first autocast region of a new machine measures (cache empty); the job's own
    work must not count as the script's steps, losses or random draws."""
    work, cache = tmp_path / "work", tmp_path / "cache"
    work.mkdir()
    (work / "train.py").write_text(SCRIPT)
    run = run_quickdev("train.py", cwd=work, env={"XDG_CACHE_HOME": str(cache)})
    assert run.returncode == 0, run.stderr
    assert (cache / "quickdev" / autocast.CACHE_FILE).is_file()  # it did measure
    assert run.result is not None
    assert run.result["optimizer_steps"] == 2 and len(run.result["losses"]) == 2
    torch.manual_seed(0)
    torch.nn.Linear(8, 2)
    expected = [torch.rand(2).tolist() for _ in range(3)]
    printed = [
        json.loads(line.split(" ", 1)[1])
        for line in run.stdout.splitlines()
        if line.startswith("RANDOM")
    ]
    assert printed == expected[: len(printed)] and printed
