"""The job's own torch work inside the user's code is not the script's: no torch function
mode sees it (the NaN hunt's, the memory forecast's recorder, the script's own)."""

from __future__ import annotations

from typing import Any

import torch
from quickdev.limits.own_work import own_work
from quickdev.limits.shapes.observe import RecordedFiles
from torch.overrides import TorchFunctionMode


class Seen(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.calls.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def test_no_mode_sees_the_jobs_own_work_and_none_redirects_it() -> None:
    with Seen() as seen:
        with own_work():
            x = torch.tensor([0.0, 1.0]).log()
            assert x[x.isfinite()].tolist() == [0.0]
        assert seen.calls == []
        x.exp()
    assert seen.calls == ["exp"]  # the script's own calls still go by
    with torch.device("meta"), own_work():  # the script's default device: not the job's
        assert torch.zeros(1).device.type == "cpu"


def test_a_shape_look_at_a_minus_inf_is_not_seen_by_the_scripts_modes() -> None:
    files = RecordedFiles()
    files.add("train.py", "__guard__", (0,), (("assign", 1, 1, 0, ("log_probs",), None, ()),))
    log_probs = torch.tensor([[0.0, float("-inf")], [-1.0, -2.0]])
    with Seen() as seen:
        files.see("__guard__", 0, (log_probs,))
    assert seen.calls == []
    (binding,) = files.record("run", "now").files[0].bindings
    (facts,) = [s.value for s in binding.names[0].seen]
    assert (facts.inf, facts.min, facts.max) == (1, -2.0, 0.0)  # the look did read the values
