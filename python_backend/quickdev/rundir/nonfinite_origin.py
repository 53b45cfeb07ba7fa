"""result.json's ``first_nonfinite``: where the NaN hunt found the first NaN or Inf came
from (part of the contract in ``rundir/result.py``, which re-exports these types).
Standard library only, as the language server reads results too."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TensorStats:
    """A tensor as the NaN hunt saw it. JSON has no NaN: the non-finite values are counted,
    and min, max and mean are those of the finite ones (None when there are none)."""

    shape: list[int]
    dtype: str
    nan: int = 0
    posinf: int = 0
    neginf: int = 0
    zeros: int = 0
    min: float | None = None
    max: float | None = None
    mean: float | None = None


@dataclass
class NonfiniteSample:
    """The sample of a DataLoader batch that carried the non-finite value."""

    loader: str  # "file:line" where the DataLoader was created
    row: int  # its place in the batch
    dataset_index: int | None = None  # the index the loader asked the dataset for


@dataclass
class NonfiniteOrigin:
    """The first operation whose NaN/Inf reached the loss, a gradient or a parameter."""

    message: str  # one line, as the terminal and the editor show it
    op: str  # "torch.log", "torch.Tensor.masked_fill", "torch.nn.functional.linear"
    # produced: from finite inputs (log of 0, 0/0, an overflow); argument: the code gave
    # torch the value (a NaN in a numpy array, a -inf fill); input: a tensor that held
    # it before any operation the hunt saw (data loaded without torch).
    cause: str
    phase: str  # setup | data | forward | backward | optimizer
    step: int  # the training step it happened in (0: before training)
    reached: str  # "the loss", "the gradient of fc.weight", "the parameter fc.weight"
    reached_step: int
    file: str | None = None  # the user's line that called the operation
    line: int | None = None
    function: str | None = None
    module: str | None = None  # "transformer.h.3.attn": the module whose forward ran it
    inputs: list[TensorStats] = field(default_factory=list)
    output: TensorStats | None = None
    sample: NonfiniteSample | None = None
    # A backward origin: the values its node kept (sqrt's "result"), by autograd's names.
    forward: dict[str, TensorStats] = field(default_factory=dict)


def origin_from_dict(data: dict[str, Any]) -> NonfiniteOrigin:
    values = dict(data)
    values["inputs"] = [TensorStats(**d) for d in values.get("inputs") or []]
    if values.get("output"):
        values["output"] = TensorStats(**values["output"])
    if values.get("sample"):
        values["sample"] = NonfiniteSample(**values["sample"])
    values["forward"] = {k: TensorStats(**d) for k, d in (values.get("forward") or {}).items()}
    return NonfiniteOrigin(**values)
