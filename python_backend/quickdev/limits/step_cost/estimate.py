"""What a step costs, known without running it: a bound for certainly cheap steps, the
costs measured before (cached), and the smaller batch size a costly step computes at."""

from __future__ import annotations

import logging
from typing import Any, TypeGuard

import torch
from torch.utils import _pytree as pytree

from quickdev.cachedir import quickdev_cache_dir
from quickdev.limits.step_cost.speed import Speed
from quickdev.rundir.jsonio import read_json_object, write_json

log = logging.getLogger(__name__)

# The smallest batch the arithmetic runs at: BatchNorm needs more than one value per channel.
SMALLEST_BATCH = 2
# A step whose FLOPs bound (6 x parameters x batch elements) fits this share of the bound
# is cheap without looking.
CERTAINLY_CHEAP_SHARE = 0.5
# The work of full-size steps found cheap (FLOPs by operator, bytes written by memory), by
# loader, batch and model: a repeat run of the same script forks no probe. A step found
# costly is always checked again (its check is the point).
CACHE_FILE = "step_costs.json"
_CACHE_ENTRIES = 500


def certainly_cheap(
    parameters: int | None, batch: Any, speed: Speed, cores: float, bound_s: float
) -> bool:
    """6 FLOPs per parameter and element of the batch (its largest tensor) bound a step of
    dense layers from above; convolutions reuse their weights more and are not bounded by
    it, so a model must be small for it to say cheap. Unknown parameters: not known cheap."""
    if parameters is None:
        return False
    tensors = [t for t in pytree.tree_leaves(batch) if isinstance(t, torch.Tensor)]
    if not tensors:
        return False
    flops = 6 * parameters * max(t.numel() for t in tensors)
    slowest = min(speed.convolution, speed.matmul)
    return flops / (slowest * max(cores, 0.05)) <= bound_s * CERTAINLY_CHEAP_SHARE


def smaller_size(full: int, full_s: float, target_s: float) -> int:
    """The largest power of two whose step takes ``target_s`` at most (steps scale with
    the batch), at least ``SMALLEST_BATCH`` and at most half of ``full``."""
    size = SMALLEST_BATCH
    while size * 2 <= full // 2 and full_s * (size * 2) / full <= target_s:
        size *= 2
    return size


def cached_work(key: str) -> tuple[dict[str, int], dict[str, int]] | None:
    """The FLOPs and the bytes written of a step measured cheap before, if kept."""
    known = (read_json_object(quickdev_cache_dir(CACHE_FILE)) or {}).get(key)
    if not isinstance(known, dict):
        return None
    flops, written = known.get("flops"), known.get("written")
    if _counts(flops) and _counts(written):
        return flops, written
    return None  # another version's figures: measured again


def _counts(value: object) -> TypeGuard[dict[str, int]]:
    return isinstance(value, dict) and all(isinstance(v, int) for v in value.values())


def cache_work(key: str, flops: dict[str, int], written: dict[str, int]) -> None:
    path = quickdev_cache_dir(CACHE_FILE)
    cached = read_json_object(path) or {}
    cached.pop(key, None)
    cached[key] = {"flops": flops, "written": written}
    kept = dict(list(cached.items())[-_CACHE_ENTRIES:])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, kept, indent=1)
    except OSError:
        log.warning("cannot cache step costs in %s", path, exc_info=True)
