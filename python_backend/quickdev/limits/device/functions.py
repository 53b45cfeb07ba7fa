"""Every torch function that takes a device, found in torch's own operator schemas.

A ``TorchFunctionMode`` would see these calls too, but it costs a Python call on
every torch call (about 1.3 us here: +58% on a step of many small ops, measured; see
``benchmarks/overhead.py``). torch's schema registry names every operator with a
``device`` argument (factories, ``*_like``, ``new_*``, windows, ``Tensor.to``,
``pin_memory``), including those torch adds later; wrapping exactly those costs
nothing on the ops that make a training step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.utils._device
from torch.utils._device import _device_constructors

from quickdev.limits.device.engine import DeviceEngine
from quickdev.limits.patching import Patcher

# Not factories (the methods below handle them), or a class (methods.py).
_OWN_HANDLER = frozenset({"to", "pin_memory", "is_pinned", "Generator"})


def device_functions() -> Iterator[tuple[Any, str, str]]:
    """``(owner, attribute, aten name)`` for each public function with a device argument."""
    for name in sorted(_names_with_device()):
        for owner, attribute in ((torch, name), (torch.Tensor, name), (torch.fft, name[4:])):
            if attribute and callable(getattr(owner, attribute, None)):
                yield owner, attribute, name
                break


def _names_with_device() -> set[str]:
    """The aten operators with a ``device`` argument that torch, ``Tensor`` or ``torch.fft``
    has a function for. Only those names' schemas are asked for: building every schema
    in the registry (``_jit_get_all_schemas``, 4000+) took ~17 ms of each job, this ~7."""
    candidates = {*dir(torch), *dir(torch.Tensor), *(f"fft_{name}" for name in dir(torch.fft))}
    return {
        name
        for name in candidates
        if not name.startswith("_")
        and name not in _OWN_HANDLER
        and any(
            argument.name == "device"
            for schema in torch._C._jit_get_schemas_for_operator(f"aten::{name}")
            for argument in schema.arguments
        )
    }


def install(patcher: Patcher, engine: DeviceEngine) -> None:
    builtins: dict[int, str] = torch.jit._builtins._get_builtin_table()  # type: ignore[no-untyped-call]
    # `with torch.device(d):` and set_default_device add d to the calls of the factories
    # torch lists once (cached), and they see torch's own functions, which our wrappers
    # call: list torch's, before the wrappers replace them.
    _device_constructors.cache_clear()
    _device_constructors()
    _install_default_device(patcher, engine)
    for owner, attribute, aten_name in device_functions():
        wrapper = _factory(getattr(owner, attribute), engine)
        patcher.set(owner, attribute, wrapper)
        # TorchScript compiles a call to torch.zeros as the aten op: keep it so for ours.
        builtins[id(wrapper)] = f"aten::{aten_name}"
        patcher.on_undo(_forget(builtins, id(wrapper)))
    _install_methods(patcher, engine)


def _install_default_device(patcher: Patcher, engine: DeviceEngine) -> None:
    """The device of ``with torch.device("cuda"):`` and ``set_default_device("cuda")``
    (``get_default_device`` answers it too), mapped once when it is set."""
    context = torch.utils._device.DeviceContext
    original_init = context.__init__

    def init(self: Any, device: Any) -> None:
        original_init(self, engine.map(device, "default device (torch.device context)"))

    patcher.set(context, "__init__", init)


def _forget(builtins: dict[int, str], key: int) -> Callable[[], None]:
    def forget() -> None:
        builtins.pop(key, None)

    return forget


def _factory(original: Callable[..., Any], engine: DeviceEngine) -> Callable[..., Any]:
    def factory(*args: Any, **kwargs: Any) -> Any:
        device = kwargs.get("device")
        if device is not None:
            target = engine.target(device)
            if target is not None:
                engine.count("device= argument")
                kwargs["device"] = target
        return original(*args, **kwargs)

    factory.__name__ = factory.__qualname__ = getattr(original, "__name__", "factory")
    factory.__doc__ = original.__doc__
    return factory


def _install_methods(patcher: Patcher, engine: DeviceEngine) -> None:
    tensor_to = torch.Tensor.to
    parse_to = torch._C._nn._parse_to
    tensor_cuda = torch.Tensor.cuda
    pin_memory = torch.Tensor.pin_memory

    def device_first(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        # .to(device, ...) / .to(device=...): a dtype or tensor first is left alone.
        if args:
            target = engine.target(args[0])
            if target is not None:
                engine.count("Tensor.to / Module.to")
                return (target, *args[1:])
        elif kwargs.get("device") is not None:
            target = engine.target(kwargs["device"])
            if target is not None:
                engine.count("Tensor.to / Module.to")
                kwargs["device"] = target
        return args

    def to(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        return tensor_to(tensor, *device_first(args, kwargs), **kwargs)

    def module_parse_to(*args: Any, **kwargs: Any) -> Any:
        # nn.Module.to parses its arguments here, so module.to(0) is mapped too.
        return parse_to(*device_first(args, kwargs), **kwargs)

    def cuda(tensor: torch.Tensor, device: Any = None, *args: Any, **kwargs: Any) -> Any:
        target = engine.target("cuda" if device is None else device)
        if target is None:
            return tensor_cuda(tensor, device, *args, **kwargs)
        engine.count("Tensor.cuda / Module.cuda")
        return tensor_to(tensor, target, non_blocking=kwargs.get("non_blocking", False))

    def pin(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if not engine.cpu:
            return pin_memory(tensor, *args, **kwargs)
        # Pinned memory is host memory a GPU copies from; with no GPU the tensor serves.
        engine.count("Tensor.pin_memory")
        return tensor

    for name, value in (("to", to), ("cuda", cuda), ("pin_memory", pin)):
        value.__doc__ = getattr(torch.Tensor, name).__doc__
        patcher.set(torch.Tensor, name, value)
    patcher.set(torch._C._nn, "_parse_to", module_parse_to)
