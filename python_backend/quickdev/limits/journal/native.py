"""Writers that open files in native code, where no audit event is raised.

``torch.save(path)`` writes through ``PyTorchFileWriter`` (C++), safetensors'
``save_file``/``save_model`` through ``serialize_file`` (Rust). Each is wrapped at
the last Python function that still holds the path, which tells the journal
"about to replace this file". Modules imported later are wrapped as they load.
NumPy, pickle, Lightning/fsspec, TensorBoard's writer, PIL, pandas and
matplotlib write through Python's ``open`` and need nothing here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from quickdev.limits.import_hook import when_imported
from quickdev.limits.journal import hook
from quickdev.limits.patching import Patcher


@dataclass(frozen=True)
class NativeWriter:
    module: str
    owner: str | None  # a class in the module, or None for a module-level function
    name: str
    position: int  # where the path is among the positional arguments
    keyword: str


WRITERS = (
    NativeWriter("torch.serialization", "_open_zipfile_writer_file", "__init__", 1, "name"),
    NativeWriter("safetensors.torch", None, "serialize_file", 1, "filename"),
    NativeWriter("safetensors.numpy", None, "serialize_file", 1, "filename"),
)


def install(patcher: Patcher) -> None:
    modules = sorted({w.module for w in WRITERS})
    when_imported(patcher, modules, lambda module: _wrap_module(module, patcher))


def _wrap_module(module: ModuleType, patcher: Patcher) -> None:
    for writer in WRITERS:
        if writer.module != module.__name__:
            continue
        owner = getattr(module, writer.owner) if writer.owner else module
        original = getattr(owner, writer.name, None)
        if original is not None:
            patcher.set(owner, writer.name, _announcing(original, writer))


def _announcing(original: Callable[..., Any], writer: NativeWriter) -> Callable[..., Any]:
    @functools.wraps(original)
    def write(*args: Any, **kwargs: Any) -> Any:
        if writer.keyword in kwargs:
            hook.announce_write(kwargs[writer.keyword])
        elif len(args) > writer.position:
            hook.announce_write(args[writer.position])
        return original(*args, **kwargs)

    return write
