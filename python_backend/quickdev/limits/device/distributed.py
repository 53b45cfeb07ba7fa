"""Distributed training written for GPUs, on CPU ranks: NCCL becomes gloo, and DDP
(and ``barrier``) drop the GPU indices they were given.

With ``--nproc N`` a torchrun script written for N GPUs runs as N CPU processes.

``destroy_process_group`` first lets go of the GIL for a moment. In torch 2.13 a
collective launched during ``backward()`` (DDP's gradient all-reduce) carries a Python
object in its thread-local state, which gloo's worker thread frees, under the GIL, after
the work completes. A job ends the epoch loop right after a step, so the group could be
destroyed, and its destructor join that worker with the GIL held, while the worker
waited for the GIL: the rank never ended (a spawned DDP trainer, one run in three).
"""

from __future__ import annotations

import time
from typing import Any

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from quickdev.limits.device.engine import DeviceEngine
from quickdev.limits.patching import Patcher

# How long a destroyed group's worker threads get the GIL for: ten switch intervals.
WORKER_GRACE_S = 0.05


def _cpu_backend(backend: Any, engine: DeviceEngine) -> Any:
    """ "nccl" and "cuda:nccl,cpu:gloo"-style backends, as gloo."""
    if isinstance(backend, str) and "nccl" in backend.lower():
        engine.count("init_process_group nccl -> gloo")
        return "gloo"
    return backend


def install(patcher: Patcher, engine: DeviceEngine) -> None:
    if not dist.is_available():
        return
    original_init = dist.init_process_group

    def init_process_group(backend: Any = None, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("device_id") is not None:
            engine.count("init_process_group device_id")
            kwargs["device_id"] = None
        return original_init(_cpu_backend(backend, engine), *args, **kwargs)

    original_barrier = dist.barrier

    def barrier(
        group: Any = None, async_op: bool = False, device_ids: Any = None, **kwargs: Any
    ) -> Any:
        if device_ids is not None:
            engine.count("barrier device_ids")
        return original_barrier(group, async_op, **kwargs)

    original_ddp_init = DistributedDataParallel.__init__

    def ddp_init(
        self: Any,
        module: Any,
        device_ids: Any = None,
        output_device: Any = None,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        if device_ids is not None or output_device is not None:
            engine.count("DistributedDataParallel device_ids")
        # CPU DDP takes neither: the module's own (CPU) device is the device.
        original_ddp_init(self, module, None, None, *args, **kwargs)

    original_destroy = dist.destroy_process_group

    def destroy_process_group(*args: Any, **kwargs: Any) -> Any:
        time.sleep(WORKER_GRACE_S)  # gloo's workers free what they hold (see above)
        return original_destroy(*args, **kwargs)

    for owner in (dist, dist.distributed_c10d):
        patcher.set(owner, "init_process_group", init_process_group)
        patcher.set(owner, "destroy_process_group", destroy_process_group)
        patcher.set(owner, "barrier", barrier)
    patcher.set(DistributedDataParallel, "__init__", ddp_init)
