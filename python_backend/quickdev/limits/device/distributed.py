"""Distributed training written for GPUs, on CPU ranks: NCCL becomes gloo, and DDP
(and ``barrier``) drop the GPU indices they were given.

With ``--nproc N`` a torchrun script written for N GPUs runs as N CPU processes.
"""

from __future__ import annotations

from typing import Any

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from quickdev.limits.device.engine import DeviceEngine
from quickdev.limits.patching import Patcher


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

    for owner in (dist, dist.distributed_c10d):
        patcher.set(owner, "init_process_group", init_process_group)
        patcher.set(owner, "barrier", barrier)
    patcher.set(DistributedDataParallel, "__init__", ddp_init)
