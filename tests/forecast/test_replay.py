"""The replay never allocates the real sizes: a 7B-parameter model is forecast in a few
hundred MB of host memory."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch
from quickdev.forecast.replay import RecurrentWithoutCudnn
from torch import nn
from torch.utils import _pytree as pytree

SEVEN_BILLION = textwrap.dedent(
    """
    import json, resource, torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from quickdev.forecast.devices import parse_devices
    from quickdev.forecast.forecast import make_forecast
    from quickdev.forecast.step import Backward, Forward, Ref, StepRecipe, TensorSpec

    # Llama-7B's width with fewer, wider layers: 7B parameters, a quick replay.
    config = LlamaConfig(hidden_size=8192, intermediate_size=22016, num_hidden_layers=8,
                         num_attention_heads=64, vocab_size=32000, use_cache=False)
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    ids = TensorSpec((1, 512), torch.long)
    recipe = StepRecipe(
        model=model,
        optimizer=torch.optim.AdamW(model.parameters()),
        events=[Forward((), {"input_ids": ids, "labels": ids}, [0, 1], True), Backward(Ref(0))],
        autocast_dtype=torch.bfloat16,
        batch_size=1,
    )
    forecast = make_forecast(recipe, torch.device("cpu"), parse_devices("auto"), "float32 weights")
    print(json.dumps({
        "parameters": sum(p.numel() for p in model.parameters()),
        "parameter_bytes": sum(m.parameters for m in forecast.modules),
        "peak": forecast.peak,
        "advice": forecast.advice,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))
    """
)


def test_a_seven_billion_parameter_model_is_forecast_in_little_host_memory() -> None:
    pytest.importorskip("transformers")
    proc = subprocess.run(
        [sys.executable, "-c", SEVEN_BILLION], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["parameters"] > 6.5e9
    # float32 weights alone are 4 bytes each (26 GB): the forecast says so ...
    assert report["parameter_bytes"] >= 4 * report["parameters"]
    assert report["peak"] > 4 * 4 * report["parameters"]  # weights, grads, two moments
    assert "alone need" in report["advice"]
    # ... while this process held a sliver of it (torch and transformers included).
    assert report["max_rss_mb"] < 1500, report


def test_a_recurrent_layer_is_replayed_with_cudnn_off_and_the_rest_left_as_it_is() -> None:
    # On a GPU, cuDNN's RNN reads its fake weights' addresses and fails (the LSTM rows of
    # benchmarks/forecast_vs_measured.py); the replay's mode turns cuDNN off for that call
    # only. What cuDNN's flag was inside each call is seen from a tensor subclass, which
    # torch asks after the mode.
    seen: dict[str, bool] = {}

    class Seen(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            name = getattr(func, "__name__", "")
            if name in ("lstm", "gru", "linear"):
                seen[name] = torch._C._get_cudnn_enabled()
            return super().__torch_function__(func, types, args, kwargs)

    enabled = torch._C._get_cudnn_enabled()
    lstm, gru, linear = nn.LSTM(4, 4, 2), nn.GRU(4, 4), nn.Linear(4, 4)
    with RecurrentWithoutCudnn():
        inputs = torch.zeros(3, 2, 4).as_subclass(Seen)
        lstm(inputs)
        gru(inputs)
        linear(inputs)
    assert seen == {"lstm": False, "gru": False, "linear": enabled}
    assert torch._C._get_cudnn_enabled() == enabled


def test_in_an_autocast_region_a_recurrent_layer_is_cast_once_then_computed_without_it() -> None:
    # Autocast would cast each weight again at every time step of torch's own kernels (a
    # transposed view, which its cache does not keep): the replay casts once, as cuDNN does.
    seen: list[tuple[set[torch.dtype], bool]] = []

    class Seen(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            if getattr(func, "__name__", "") == "lstm":
                dtypes = {a.dtype for a in pytree.tree_leaves(args) if isinstance(a, torch.Tensor)}
                seen.append((dtypes, torch.is_autocast_enabled("cuda")))
            return super().__torch_function__(func, types, args, kwargs)

    with RecurrentWithoutCudnn(torch.bfloat16):
        output, _ = nn.LSTM(4, 4)(torch.zeros(3, 2, 4).as_subclass(Seen))
    assert seen == [({torch.bfloat16}, False)]
    assert output.dtype == torch.bfloat16
