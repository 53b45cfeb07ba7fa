"""The NaN hunt on faithful small training scripts, each with one planted fault: it names
the operation, the user's line, the module, the step and the phase, and nothing else.

Each script is run as a user runs it (``quickdev run --find-nonfinite``); the expected
line is found in the script by its text, and the step is checked against what the job
recorded independently (the losses it saw, the optimizer steps it counted).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import QuickdevRun, quickdev_run

SCRIPTS = Path(__file__).parent / "scripts"


def hunt(script: str, cwd: Path, *options: str, script_args: tuple[str, ...] = ()) -> QuickdevRun:
    command = ["--find-nonfinite", "--runs-dir", str(cwd / "runs"), *options]
    run = quickdev_run(*command, str(SCRIPTS / script), *script_args, cwd=cwd, timeout=300)
    # The hunt followed every call: none of its own failures was said.
    assert "the NaN hunt could not follow" not in run.stderr, run.stderr
    return run


def line_of(script: str, text: str) -> int:
    lines = (SCRIPTS / script).read_text(encoding="utf-8").splitlines()
    found = [i + 1 for i, line in enumerate(lines) if text in line]
    assert len(found) == 1, f"{text!r} is not on exactly one line of {script}"
    return found[0]


def found(run: QuickdevRun, script: str) -> dict[str, Any]:
    """The origin, after the checks every found fault shares: the job failed with exit 1,
    its error points at the origin's line, and the origin is in the script."""
    assert run.result is not None, run.stderr
    result = run.result
    origin = result["first_nonfinite"]
    assert origin is not None, (result["status"], result.get("error"), run.stderr[-2000:])
    assert run.returncode == 1
    assert (result["status"], result["stop_reason"]) == ("failed", "nonfinite")
    assert result["limits"]["find_nonfinite"] is True
    error = result["error"]
    assert error["type"] == "NonFiniteValue"
    assert (error["file"], error["line"]) == (origin["file"], origin["line"])
    assert error["message"] == origin["message"]
    assert Path(origin["file"]) == SCRIPTS / script
    return origin


def test_log_of_zero_in_a_custom_loss(tmp_path: Path) -> None:
    script = "log_zero_loss.py"
    run = hunt(script, tmp_path)
    origin = found(run, script)
    assert origin["op"] == "torch.log"
    assert origin["line"] == line_of(script, "log_probs = torch.log(probs)")
    assert origin["function"] == "smoothed_cross_entropy"
    assert (origin["phase"], origin["cause"], origin["module"]) == ("forward", "produced", None)
    assert origin["reached"] == "the loss"
    assert origin["output"]["neginf"] > 0
    assert origin["inputs"][0]["zeros"] > 0, "the probabilities that underflowed to 0"
    # The step is the first whose loss the job saw non-finite, and it came after some.
    losses = run.result["losses"]  # type: ignore[index]
    assert len(losses) == origin["step"] == origin["reached_step"] > 5
    assert all(math.isfinite(v) for v in losses[:-1]) and not math.isfinite(losses[-1])


def test_the_shape_hints_looks_leave_the_origin_to_the_op_that_made_it(tmp_path: Path) -> None:
    """Shapes are recorded (the default): the look at ``log_probs`` reads its finite values,
    which the hunt must not take for a call that made the -inf finite again (by design)."""
    script = "raw_pixels_loss.py"
    run = hunt(script, tmp_path)
    origin = found(run, script)
    log_line = line_of(script, "log_probs = torch.log(probs)")
    assert (origin["op"], origin["line"]) == ("torch.log", log_line), origin["message"]
    assert "by design" not in origin["message"]
    assert (origin["phase"], origin["cause"], origin["step"]) == ("forward", "produced", 1)
    assert origin["output"]["neginf"] > 0
    # The look under test ran: the record holds log_probs's -inf, counted.
    shapes = json.loads((Path(run.result["run_dir"]) / "shapes.json").read_text())  # type: ignore[index]
    (facts,) = [
        seen["value"]
        for file in shapes["files"]
        for binding in file["bindings"]
        if binding["line"] == log_line
        for name in binding["names"]
        for seen in name["seen"]
    ]
    assert facts["inf"] > 0


def test_a_normalisation_dividing_by_a_zero_std(tmp_path: Path) -> None:
    script = "zero_std_norm.py"
    origin = found(hunt(script, tmp_path), script)
    assert origin["op"] == "torch.Tensor.div"
    assert origin["line"] == line_of(script, "return (x - mean) / std")
    assert (origin["module"], origin["phase"], origin["cause"]) == ("norm", "forward", "produced")
    # Rows 224-255, the stuck sensor, are the 8th batch of 32: past --batches (2).
    assert origin["step"] == origin["reached_step"] == 8
    numerator, std = origin["inputs"]
    assert std["zeros"] == std["shape"][1] == 6 and numerator["max"] == 0
    assert origin["output"]["nan"] > 0


def test_float16_overflow_under_autocast_in_an_attention_score(tmp_path: Path) -> None:
    script = "autocast_attention.py"
    origin = found(hunt(script, tmp_path), script)
    assert origin["op"] == "torch.Tensor.matmul"
    assert origin["line"] == line_of(script, "scores = q @ k.transpose(-2, -1)")
    assert (origin["module"], origin["phase"], origin["cause"]) == (
        "blocks.0.attn",
        "forward",
        "produced",
    )
    # Rows 160-167, the burst, are the 21st batch of 8. The -inf of the causal mask, made
    # on every step before, was never blamed.
    assert origin["step"] == 21
    assert origin["output"]["dtype"] == "float16" and origin["output"]["posinf"] > 0
    assert all(i["dtype"] == "float16" and i["nan"] == i["posinf"] == 0 for i in origin["inputs"])


def test_a_learning_rate_that_makes_a_parameter_infinite(tmp_path: Path) -> None:
    script = "lr_range.py"
    run = hunt(script, tmp_path)
    origin = found(run, script)
    assert origin["line"] == line_of(script, "opt.step()")
    assert (origin["phase"], origin["cause"], origin["module"]) == ("optimizer", "produced", "fc")
    assert origin["reached"] == "the parameter fc.weight"
    assert (
        origin["op"].startswith("torch.")
        and origin["output"]["posinf"] + origin["output"]["neginf"] > 0
    )
    # The update of step N overflowed (the step ran: it is counted); the N - 1 steps before
    # it ended finite, and so did step N's loss: the forward never saw an infinite weight.
    result = run.result
    assert result is not None
    assert origin["step"] == origin["reached_step"] == result["optimizer_steps"] > 100
    # The update is named as the user called it, with its learning rate and gradient.
    assert origin["op"] == "torch.optim.Adam.step" and origin["message"].startswith(
        "inf from torch.optim.Adam.step (lr="
    )
    assert len(result["losses"]) == origin["step"]
    assert all(math.isfinite(v) for v in result["losses"])


def test_a_nan_in_one_sample_of_a_dataset(tmp_path: Path) -> None:
    script = "nan_sample.py"
    origin = found(hunt(script, tmp_path, script_args=(str(tmp_path / "rows.csv"),)), script)
    assert origin["op"] == "torch.tensor"
    assert origin["line"] == line_of(script, "x = torch.tensor(self.features[index]")
    assert origin["function"] == "__getitem__"
    assert (origin["phase"], origin["cause"], origin["module"]) == ("data", "argument", None)
    # Row 37 of the CSV is in the 5th batch of 8, at row 5.
    assert origin["step"] == origin["reached_step"] == 5
    assert origin["sample"]["dataset_index"] == 37
    assert origin["sample"]["row"] == 5
    assert origin["sample"]["loader"] == f"{SCRIPTS / script}:{line_of(script, 'loader = ')}"


def test_an_infinite_derivative_in_backward(tmp_path: Path) -> None:
    script = "sqrt_distance.py"
    origin = found(hunt(script, tmp_path), script)
    assert origin["op"] == "torch.sqrt"
    assert origin["line"] == line_of(script, "return torch.sqrt(")
    assert (origin["phase"], origin["cause"], origin["module"]) == ("backward", "produced", None)
    assert origin["reached"].startswith("the gradient of net.")
    assert origin["step"] == 13, "the duplicated sample comes at step 13"
    assert origin["output"]["posinf"] > 0
    # The forward value that made it: sqrt's result was 0 for the duplicated sample.
    assert origin["forward"]["result"]["zeros"] == 1
    assert ", where its forward result was 0 (1 of 16 values)" in origin["message"]


def test_a_minus_inf_attention_mask_is_not_blamed(tmp_path: Path) -> None:
    run = hunt("gpt_masked.py", tmp_path)
    assert run.result is not None, run.stderr
    result = run.result
    assert (result["status"], result["first_nonfinite"], run.returncode) == ("passed", None, 0)
    # The whole loop ran under the hunt: 60 steps, each with its -inf mask.
    assert result["optimizer_steps"] == 60


def test_without_the_flag_the_job_is_a_quick_dev_job(tmp_path: Path) -> None:
    script = "zero_std_norm.py"
    run = quickdev_run("--runs-dir", str(tmp_path / "runs"), str(SCRIPTS / script), cwd=tmp_path)
    assert run.result is not None, run.stderr
    result = run.result
    assert result["first_nonfinite"] is None and result["limits"]["find_nonfinite"] is False
    # Two batches of the first epoch, before the stuck sensor's batch.
    assert result["status"] != "failed" and result["optimizer_steps"] == 2
    assert result["limits"]["max_steps"] is None


@pytest.mark.parametrize("given", [[], ["--max-steps", "5"]])
def test_the_hunt_trains_for_its_step_budget(tmp_path: Path, given: list[str]) -> None:
    """Past --batches and the one epoch; --max-steps still bounds it."""
    run = hunt("gpt_masked.py", tmp_path, *given)
    assert run.result is not None, run.stderr
    limits = run.result["limits"]
    assert limits["max_steps"] == (5 if given else 500)
    assert limits["train_passes"] is None
    assert run.result["optimizer_steps"] == (5 if given else 60)


def test_a_nan_made_inside_the_call_that_takes_a_minus_inf_mask(tmp_path: Path) -> None:
    """The mask's -inf is by design (softmax made it finite on the steps before); the NaN is
    new in the attention call that met it, where the activations overflowed."""
    script = "transformer_lm.py"
    origin = found(hunt(script, tmp_path), script)
    assert origin["op"] == "torch.nn.functional.multi_head_attention_forward"
    assert origin["line"] == line_of(script, "output = self.transformer_encoder(src")
    assert origin["module"] == "transformer_encoder.layers.0.self_attn"
    assert (origin["phase"], origin["cause"], origin["step"]) == ("forward", "produced", 3)
    mask_line = line_of(script, "return torch.log(torch.tril(")
    assert f"-inf by design (torch.log at line {mask_line}" in origin["message"]
    assert origin["output"]["nan"] > 0


def test_a_lightning_module_trained_for_epochs(tmp_path: Path) -> None:
    """The Trainer trains past fast_dev_run's batches for the hunt. The probabilities
    underflow to subnormals there: log stays finite, its derivative 1/p overflows."""
    script = "lightning_log_loss.py"
    run = hunt(script, tmp_path)
    origin = found(run, script)
    assert origin["op"] == "torch.log"
    assert origin["line"] == line_of(script, "log_probs = torch.log(")
    assert (origin["phase"], origin["cause"], origin["module"]) == ("backward", "produced", None)
    # Lightning runs forward and backward inside optimizer.step(closure): the first sink is
    # the parameter the step updated, named from the LightningModule.
    assert origin["reached"] == "the parameter net.0.weight"
    assert origin["step"] == origin["reached_step"] > 5
    # Past fast_dev_run's two batches and its one epoch: the script's max_epochs was kept.
    assert run.result is not None
    assert not any("max_epochs" in s for s in run.result["limits"]["settings_changed"])


def test_a_padding_index_and_an_empty_review(tmp_path: Path) -> None:
    """``nn.Embedding(padding_idx=0)`` writes a row of its weight in place under no_grad
    as it is built: the hunt follows the script past it, to the mean that divides 0 by 0."""
    script = "text_padding.py"
    run = hunt(script, tmp_path)
    origin = found(run, script)
    assert origin["op"] == "torch.Tensor.div"
    assert origin["line"] == line_of(script, "pooled = summed / mask.sum(dim=1)")
    assert (origin["phase"], origin["cause"], origin["module"]) == (
        "forward",
        "produced",
        "MeanPooled",
    )
    # Review 90, the empty one, is in the 6th batch of 16.
    assert origin["step"] == origin["reached_step"] == 6
    _, lengths = origin["inputs"]
    assert lengths["zeros"] == 1 and lengths["min"] == 0
    # The loss's NaN is a problem (the verdict's); none of the hunt's own.
    assert run.result is not None
    assert [p["kind"] for p in run.result["problems"]] == ["nonfinite_loss"]


def test_a_gpt_with_a_padding_index_and_a_row_masked_whole(tmp_path: Path) -> None:
    """A nanoGPT with Hugging Face habits (padding_idx, its row zeroed in _init_weights,
    tied weights, an EMA copy updated under no_grad): left padding under the causal mask
    leaves a short document's padded queries with no key, deep in the first block's
    attention, at step 5."""
    script = "gpt_padding.py"
    run = hunt(script, tmp_path)
    origin = found(run, script)
    assert origin["op"] == "torch.nn.functional.softmax"
    assert origin["line"] == line_of(script, "att = F.softmax(att, dim=-1)")
    assert origin["module"] == "transformer.h.0.attn"
    assert (origin["phase"], origin["cause"], origin["reached"]) == (
        "forward",
        "produced",
        "the loss",
    )
    # Document 37, the short one, is in the 5th batch of 8, at row 5.
    assert origin["step"] == origin["reached_step"] == 5
    assert "row [5, 0, 0, :] of its input and " in origin["message"]
    assert (
        "fully masked (all 16 values -inf), and a softmax over no value is NaN" in origin["message"]
    )
    mask_line = line_of(script, "att = att.masked_fill(self.bias")
    assert f"the -inf is from torch.Tensor.masked_fill at line {mask_line}" in origin["message"]
    # The loss's NaN is a problem (the verdict's); none of the hunt's own.
    assert run.result is not None
    assert [p["kind"] for p in run.result["problems"]] == ["nonfinite_loss"]
