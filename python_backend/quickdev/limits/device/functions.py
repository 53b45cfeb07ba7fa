"""Every torch function that takes a device, through one ``TorchFunctionMode``.

Factories (``torch.zeros(..., device=)``, ``torch.tensor``, ``new_*``, ``arange``, ...)
carry the device as a keyword: one check covers all of them, including those torch
adds later. A few Tensor methods take it positionally or act on pinned memory;
they have a handler each, found by one dict lookup. ``Module.to`` parses its
arguments with ``torch._C._nn._parse_to``, which comes through here too.

A mode costs one Python call per torch call (about 1 us on this machine, see
``benchmarks/overhead.py``); the handler does as little as it can on the way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from quickdev.limits.device.engine import DeviceEngine
from quickdev.limits.patching import Patcher

Handler = Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]

# torch's words for "this kernel has no CPU implementation" (a custom CUDA extension).
_NO_CPU_KERNEL = "with arguments from the 'CPU' backend"


class DeviceMode(TorchFunctionMode):
    def __init__(self, engine: DeviceEngine) -> None:
        super().__init__()
        self.engine = engine
        self.handlers: dict[Any, Handler] = _method_handlers(engine)

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        if kwargs:
            device = kwargs.get("device")
            if device is not None:
                target = self.engine.target(device)
                if target is not None:
                    self.engine.count("device= argument")
                    kwargs = {**kwargs, "device": target}
        else:
            kwargs = {}
        handler = self.handlers.get(func)
        try:
            if handler is not None:
                return handler(func, args, kwargs)
            return func(*args, **kwargs)
        except NotImplementedError as exc:
            if self.engine.cpu and _NO_CPU_KERNEL in str(exc):
                name = str(exc).split("'")[1] if "'" in str(exc) else str(func)
                self.engine.unavailable(f"the CUDA-only kernel {name}")
            raise


def _method_handlers(engine: DeviceEngine) -> dict[Any, Handler]:
    def to(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # tensor.to(device, ...), module.to(device) via _parse_to: a device comes first.
        first = 1 if func is torch.Tensor.to else 0
        if len(args) > first:
            target = engine.target(args[first])
            if target is not None:
                engine.count("Tensor.to / Module.to")
                args = (*args[:first], target, *args[first + 1 :])
        return func(*args, **kwargs)

    def cuda(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        tensor, rest = args[0], args[1:]
        device = kwargs.pop("device", rest[0] if rest else None)
        target = engine.target("cuda" if device is None else device)
        if target is None:
            return func(*args, **kwargs)
        engine.count("Tensor.cuda / Module.cuda")
        non_blocking = kwargs.get("non_blocking", False)
        return tensor.to(
            target,
            non_blocking=non_blocking,
            memory_format=kwargs.get("memory_format", torch.preserve_format),
        )

    def pin_memory(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not engine.cpu:
            return func(*args, **kwargs)
        # Pinned memory is host memory for a GPU to copy from; with no GPU the
        # tensor itself serves.
        engine.count("Tensor.pin_memory")
        return args[0]

    handlers: dict[Any, Handler] = {
        torch.Tensor.to: to,
        torch._C._nn._parse_to: to,
        torch.Tensor.cuda: cuda,
        torch.Tensor.pin_memory: pin_memory,
    }
    return handlers


def install(patcher: Patcher, engine: DeviceEngine) -> DeviceMode:
    mode = DeviceMode(engine)
    mode.__enter__()  # type: ignore[no-untyped-call]
    patcher.on_undo(lambda: mode.__exit__(None, None, None))  # type: ignore[no-untyped-call]
    return mode
