"""What CUDA would choose, where the fake step runs on the CPU stand-in.

Autocast: CPU autocast and CUDA autocast cast different ops. On CUDA, softmax,
layer_norm, the losses, ``exp``/``log``/``pow``, ``sum`` and the norms run in float32
(their outputs are float32, twice the bytes), and a few more products run in 16 bits.
The lists are those of the ``torch.amp`` reference ("CUDA Ops that can autocast to
float16/float32").

Attention: with dropout, the CPU's scaled_dot_product_attention falls back to the math
path, which keeps the whole (time x time) attention matrix and its dropout mask; CUDA's
fused kernels (flash, memory-efficient) apply dropout inside and keep only the output and
a row statistic. The replay asks for the fused path's memory by leaving dropout out, which
changes no shape.

A function is matched by name at the level the script calls it (``F.softmax``,
``Tensor.softmax``, ``torch.layer_norm``, ``F.scaled_dot_product_attention``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from quickdev.dtypes import HALF

# fmt: off
CUDA_TO_FLOAT32 = frozenset((
    "__pow__", "__rdiv__", "__rpow__", "__rtruediv__", "acos", "asin",
    "binary_cross_entropy_with_logits", "cosh", "cosine_embedding_loss", "cdist",
    "cosine_similarity", "cross_entropy", "cumprod", "cumsum", "dist", "erfinv", "exp",
    "expm1", "group_norm", "hinge_embedding_loss", "kl_div", "l1_loss", "layer_norm", "log",
    "log_softmax", "log10", "log1p", "log2", "margin_ranking_loss", "mse_loss",
    "multilabel_margin_loss", "multi_margin_loss", "nll_loss", "norm", "normalize", "pdist",
    "poisson_nll_loss", "pow", "prod", "reciprocal", "rsqrt", "sinh", "smooth_l1_loss",
    "soft_margin_loss", "softmax", "softmin", "softplus", "sum", "renorm", "tan",
    "triplet_margin_loss",
))
# On CUDA's 16-bit list and not on the CPU's.
CUDA_TO_LOWER = frozenset((
    "addmv", "addr", "mv", "chain_matmul", "multi_dot", "lstm_cell", "gru_cell",
    "rnn_tanh_cell", "rnn_relu_cell",
))
# fmt: on


# multi_head_attention_forward's dropout_p, by position (nn.MultiheadAttention passes it so).
_MHA_DROPOUT_AT = 10


class CudaChoices(TorchFunctionMode):
    """While CPU autocast is on, casts the arguments of the ops where CUDA's lists differ
    (to ``dtype``, the script's 16-bit type); always, attention without dropout."""

    def __init__(self, dtype: torch.dtype | None) -> None:
        super().__init__()
        self.dtype = dtype

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name == "scaled_dot_product_attention":
            args, kwargs = _without_dropout(args, kwargs, 3)
        elif name == "multi_head_attention_forward" and not kwargs.get("need_weights", True):
            args, kwargs = _without_dropout(args, kwargs, _MHA_DROPOUT_AT)
        autocast = self.dtype is not None and torch.is_autocast_enabled("cpu")
        if autocast and kwargs.get("dtype") is None:
            if name in CUDA_TO_FLOAT32:
                args, kwargs = _cast(args, kwargs, HALF, torch.float32)
            elif name in CUDA_TO_LOWER and self.dtype is not None:
                args, kwargs = _cast(args, kwargs, (torch.float32,), self.dtype)
        return func(*args, **kwargs)


def _without_dropout(args: Any, kwargs: Any, position: int) -> tuple[Any, Any]:
    if "dropout_p" in kwargs:
        return args, {**kwargs, "dropout_p": 0.0}
    if len(args) > position:
        return (*args[:position], 0.0, *args[position + 1 :]), kwargs
    return args, kwargs


def _cast(args: Any, kwargs: Any, from_: tuple[torch.dtype, ...], to: torch.dtype) -> Any:
    def cast(t: torch.Tensor) -> torch.Tensor:
        return t.to(to) if t.dtype in from_ else t

    return pytree.tree_map_only(torch.Tensor, cast, (args, kwargs))
