"""DistributedDataParallel in a forecast: the module it wraps is what is replayed (DDP's
own forward talks to the other ranks), and the gradient buckets its reducer keeps beside
the gradients are counted as gradients."""

from __future__ import annotations

import logging

from torch import nn
from torch.nn.parallel import DistributedDataParallel

log = logging.getLogger(__name__)


def replayed_module(module: nn.Module) -> nn.Module:
    """The module whose forward is replayed: the one DDP wraps, else ``module`` itself."""
    if isinstance(module, DistributedDataParallel):
        wrapped: nn.Module = module.module
        return wrapped
    return module


def gradient_buckets(module: nn.Module) -> list[int]:
    """Bytes of each bucket DDP's reducer holds for all-reducing gradients: a second copy of
    every gradient, unless ``gradient_as_bucket_view`` makes the gradients views of them
    (then nothing more). Empty for a module that is not DDP."""
    if not isinstance(module, DistributedDataParallel) or module.gradient_as_bucket_view:
        return []
    try:
        data = module._get_ddp_logging_data()  # type: ignore[no-untyped-call]
        sizes = str(data.get("bucket_sizes", ""))
    except (RuntimeError, AttributeError) as exc:  # a torch without the reducer's data
        log.info("DDP's bucket sizes are not known: %s", exc)
        sizes = ""
    buckets = [int(size) for size in sizes.split(",") if size.strip().isdigit()]
    if buckets:
        return buckets
    # One bucket per bucket_bytes_cap of gradients, as DDP fills them.
    total = sum(p.numel() * p.element_size() for p in module.parameters() if p.requires_grad)
    cap = max(int(module.bucket_bytes_cap), 1)
    return [min(cap, total - start) for start in range(0, total, cap)]
