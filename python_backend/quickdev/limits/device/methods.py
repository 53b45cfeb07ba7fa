"""The device idioms that are not torch functions, so the mode never sees them.

``torch.load`` (map_location as a string, device, dict or nothing), the
``torch.Generator`` class and ``torch.device(int)``: one patch each, through the
engine's single mapping.
"""

from __future__ import annotations

from typing import Any

import torch

from quickdev.limits.device.engine import DeviceEngine
from quickdev.limits.patching import Patcher


def install(patcher: Patcher, engine: DeviceEngine) -> None:
    _install_load(patcher, engine)
    _install_generator(patcher, engine)
    _install_device_type(patcher, engine)
    _install_set_device(patcher, engine)
    _install_mps(patcher, engine)


def _install_load(patcher: Patcher, engine: DeviceEngine) -> None:
    original_load = torch.load

    def restore_location(storage: Any, location: str) -> Any:
        # Called for each storage with the location it was saved from ("cuda:1").
        target = engine.target(location)
        if target is None:
            return None  # torch's default restore
        engine.count("torch.load storage location")
        return storage.cuda(target.index) if target.type == "cuda" else storage

    def load(f: Any, map_location: Any = None, *args: Any, **kwargs: Any) -> Any:
        if map_location is None:
            map_location = restore_location
        elif isinstance(map_location, dict):
            mapped = {
                key: engine.map(value, "torch.load map_location")
                for key, value in map_location.items()
            }
            map_location = _then(mapped, restore_location)
        elif not callable(map_location):
            map_location = engine.map(map_location, "torch.load map_location")
        return original_load(f, map_location, *args, **kwargs)

    patcher.set(torch, "load", load)


def _then(mapping: dict[str, Any], fallback: Any) -> Any:
    """A dict map_location, then the engine for the locations it does not name."""

    def restore(storage: Any, location: str) -> Any:
        if location in mapping:
            location = str(mapping[location])
        moved = fallback(storage, location)
        if moved is not None:
            return moved
        # torch's own restore would use the location saved in the file, not the mapped one.
        return torch.serialization.default_restore_location(storage, location)  # type: ignore[no-untyped-call]

    return restore


def _install_generator(patcher: Patcher, engine: DeviceEngine) -> None:
    original = torch.Generator

    class Generator(original):  # type: ignore[misc, valid-type]
        # A subclass, so isinstance checks against torch.Generator still hold.
        # The C type reads the device when the object is made, in __new__.
        def __new__(cls, device: Any = "cpu") -> Any:
            return super().__new__(cls, device=engine.map(device, "torch.Generator(device=)"))

        def __init__(self, device: Any = "cpu") -> None:
            pass

    Generator.__name__ = Generator.__qualname__ = "Generator"
    Generator.__module__ = "torch"
    patcher.set(torch, "Generator", Generator)


class _DeviceType(type):
    real: Any = torch.device

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls.real)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return issubclass(sub, cls.real)

    def __eq__(cls, other: Any) -> bool:
        return other is cls or other is cls.real

    def __hash__(cls) -> int:
        return hash(cls.real)


def _install_device_type(patcher: Patcher, engine: DeviceEngine) -> None:
    """``torch.device(0)`` asks for an accelerator this build lacks before any call
    could map it; name it ``cuda:0`` so the call that uses it is mapped."""
    if not engine.cpu:
        return
    real = torch.device

    class device(metaclass=_DeviceType):
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            if args and isinstance(args[0], int) and not isinstance(args[0], bool):
                engine.count("torch.device(int)")
                return real("cuda", args[0])
            return real(*args, **kwargs)

    # torch.device pickles as the global ``torch.device`` (Trainer states, optimizer
    # checkpoints hold devices): the stand-in must answer to that name.
    device.__module__, device.__qualname__ = "torch", "device"
    patcher.set(torch, "device", device)


def _install_set_device(patcher: Patcher, engine: DeviceEngine) -> None:
    """On a GPU machine, ``set_device(local_rank)`` past its GPUs picks one it has."""
    if engine.cpu:
        return  # cuda_shim answers torch.cuda for a CPU job
    original = torch.cuda.set_device

    def set_device(device: Any) -> None:
        original(engine.map(device, "torch.cuda.set_device"))

    patcher.set(torch.cuda, "set_device", set_device)


def _install_mps(patcher: Patcher, engine: DeviceEngine) -> None:
    """Apple-GPU-only calls have nothing to stand in for them: one line, at the call."""
    if torch.backends.mps.is_available():
        return
    for name in (
        "synchronize",
        "empty_cache",
        "current_allocated_memory",
        "driver_allocated_memory",
        "set_per_process_memory_fraction",
    ):
        if hasattr(torch.mps, name):
            patcher.set(torch.mps, name, _unavailable(engine, f"torch.mps.{name}()"))


def _unavailable(engine: DeviceEngine, call: str) -> Any:
    def fail(*args: Any, **kwargs: Any) -> Any:
        return engine.unavailable(call)

    return fail
