"""A row masked whole: the NaN a softmax (or an attention) makes when every value it is
given along its dimension is masked out. Softmax over no value has no answer; the mask's
``-inf`` is there by design, the row that kept nothing is the fault (left padding under a
causal mask, a sequence made only of padding).
"""

from __future__ import annotations

from typing import Any

import torch

# The value that masks an entry out, per call that normalises along a dimension.
_MASKED_BY = {"softmax": -1, "log_softmax": -1, "softmin": 1}
_MHA = "multi_head_attention_forward"


def fully_masked(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any], out: torch.Tensor
) -> str | None:
    """Words for the first row the call was given fully masked, when its NaN comes from one;
    None otherwise."""
    if name in _MASKED_BY:
        return _softmax_row(name, args, kwargs, out)
    if name == _MHA:
        return _attention_row(kwargs, out)
    return None


def _softmax_row(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any], out: torch.Tensor
) -> str | None:
    x = args[0] if args else kwargs.get("input")
    if not isinstance(x, torch.Tensor) or x.dim() == 0 or not x.is_floating_point():
        return None
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    if not isinstance(dim, int):
        dim = 0 if x.dim() in (0, 1, 3) else 1  # softmax's legacy choice for dim=None
    sign = _MASKED_BY[name]
    with torch.no_grad():
        if bool(torch.isnan(x).any()) or not bool(torch.isnan(out).any()):
            return None  # a NaN passed on, or none made
        masked = (torch.isneginf(x) if sign < 0 else torch.isposinf(x)).all(dim=dim)
        rows = masked.nonzero()
    if not len(rows):
        return None
    size = x.shape[dim]
    value = "-inf" if sign < 0 else "inf"
    where = list(rows[0].tolist())
    where.insert(dim % x.dim(), ":")
    row = f"row [{', '.join(str(i) for i in where)}] of its input"
    rows_were = f"{row} and {len(rows) - 1} more were" if len(rows) > 1 else f"{row} was"
    return (
        f"{rows_were} fully masked (all {size} values {value}), and a softmax over no value is NaN"
    )


def _attention_row(kwargs: dict[str, Any], out: torch.Tensor) -> str | None:
    """``nn.MultiheadAttention``: a query whose keys are all masked, by the padding mask
    (True or -inf: left out) and the attention mask together."""
    padding = kwargs.get("key_padding_mask")
    attention = kwargs.get("attn_mask")
    if padding is None and attention is None:
        return None
    with torch.no_grad():
        if not bool(torch.isnan(out).any()):
            return None
        left_out = _left_out(padding)  # [batch, keys]
        per_query = _left_out(attention)  # [queries, keys] or [batch * heads, queries, keys]
        if left_out is not None and per_query is not None and per_query.dim() == 2:
            masked = (left_out[:, None, :] | per_query[None, :, :]).all(dim=-1)
            rows = masked.nonzero()
            if len(rows):
                b, q = rows[0].tolist()
                return (
                    f"query {q} of sample {b} had every key masked (its padding mask and "
                    "the attention mask together), and attention over no key is NaN"
                )
        if left_out is not None:
            rows = left_out.all(dim=-1).nonzero()
            if len(rows):
                b = int(rows[0, 0])
                return (
                    f"sample {b}'s key_padding_mask masks all {left_out.shape[-1]} keys: "
                    "attention over no key is NaN"
                )
        if per_query is not None:
            rows = per_query.all(dim=-1).nonzero()
            if len(rows):
                where = ", ".join(str(i) for i in rows[0].tolist())
                return f"row [{where}] of attn_mask masks every key: attention over no key is NaN"
    return None


def _left_out(mask: Any) -> torch.Tensor | None:
    if not isinstance(mask, torch.Tensor) or mask.dim() == 0:
        return None
    if mask.dtype == torch.bool:
        return mask
    if mask.is_floating_point():
        return torch.isneginf(mask)
    return None
