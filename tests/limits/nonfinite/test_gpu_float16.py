"""Float16 as a GPU would compute it: a CUDA script's autocast regions run on this CPU in
float32 under the hunt, and each call is checked against the dtype CUDA's autocast would
give it. An exp that CUDA keeps in float32, then a bmm that CUDA computes in float16 (and
so casts the exponentials to float16), overflows on a GPU: found here. Where the
exponentials are normalised first, nothing overflows on a GPU: nothing is blamed.

Both whatever this CPU's half precision speed (pinned through the job's own cache of
measured speeds): the hunt's result must not depend on the dtype the stand-in would pick.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.limits.nonfinite.test_planted_faults import found, hunt, line_of
from tests.support.autocast import FAST_FP16, SLOW_HALF, pin_cpu_autocast
from tests.support.stand_in import cpu_stand_in

# The CPU standing in for a GPU's float16: on a GPU the script computes in real float16.
pytestmark = cpu_stand_in

SCRIPT = "cuda_fp16_attention.py"
SPEEDS = {"float32 fastest here": SLOW_HALF, "float16 fastest here": FAST_FP16}


@pytest.mark.parametrize("speeds", list(SPEEDS), ids=list(SPEEDS))
def test_a_float16_bmm_that_overflows_on_a_gpu_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, speeds: str
) -> None:
    pin_cpu_autocast(monkeypatch, tmp_path / "cache", SPEEDS[speeds])
    run = hunt(SCRIPT, tmp_path)
    origin = found(run, SCRIPT)
    assert origin["op"] == "torch.bmm"
    assert origin["line"] == line_of(SCRIPT, "mixed = torch.bmm(torch.exp(scores), v)")
    assert (origin["module"], origin["phase"], origin["cause"]) == ("attn", "forward", "produced")
    # Samples 48-55, the readings in other units, are the 7th batch of 8.
    assert origin["step"] == origin["reached_step"] == 7
    assert (
        ": it would overflow float16 on a GPU: CUDA's autocast casts an input of "
        in (origin["message"])
    )
    # On this CPU the exponentials are finite (float32); the origin's inputs say so.
    exponentials = origin["inputs"][0]
    assert exponentials["dtype"] == "float32" and exponentials["max"] > 65504
    assert exponentials["posinf"] == exponentials["nan"] == 0
    assert _regions_ran_in_float32(run.result)


@pytest.mark.parametrize("speeds", list(SPEEDS), ids=list(SPEEDS))
def test_where_cuda_keeps_float32_nothing_is_blamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, speeds: str
) -> None:
    pin_cpu_autocast(monkeypatch, tmp_path / "cache", SPEEDS[speeds])
    run = hunt(SCRIPT, tmp_path, script_args=("--normalise-first",))
    assert run.result is not None, run.stderr
    result = run.result
    assert (result["status"], result["first_nonfinite"], run.returncode) == ("passed", None, 0)
    # Every batch trained, the one with the large scores (the 7th) too.
    assert result["optimizer_steps"] == 16
    assert _regions_ran_in_float32(result)


def _regions_ran_in_float32(result: dict | None) -> bool:
    assert result is not None
    (region,) = result["device"]["autocast"]
    return (
        region["asked"] == "cuda float16"
        and region["ran"] == "float32"
        and ("NaN hunt" in region["why"])
    )
