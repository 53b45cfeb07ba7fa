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
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

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
    waiting = {w.module for w in WRITERS}
    for name in list(waiting):
        module = sys.modules.get(name)
        if module is not None:
            _wrap_module(module, patcher)
            waiting.discard(name)
    if waiting:
        finder = _AfterImport(waiting, lambda module: _wrap_module(module, patcher))
        sys.meta_path.insert(0, finder)
        patcher.on_undo(lambda: sys.meta_path.remove(finder))


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


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then(module)`` right after one of ``names`` executes."""

    def __init__(self, names: set[str], then: Callable[[ModuleType], None]) -> None:
        self.names = names
        self.then = then

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                _run_after_exec(spec, self.then)
                return spec
        return None


def _run_after_exec(
    spec: importlib.machinery.ModuleSpec, then: Callable[[ModuleType], None]
) -> None:
    loader = spec.loader
    original_exec = loader.exec_module  # type: ignore[union-attr]

    def exec_module(module: ModuleType) -> None:
        original_exec(module)
        then(module)

    loader.exec_module = exec_module  # type: ignore[union-attr, method-assign]
