"""Modules and parameters by their names in the model: ``transformer.h.3.attn``,
``net.0.weight``. Global registration hooks record, as the model is built, which module
holds which (so a submodule a LightningModule calls directly is named from that
LightningModule); global forward hooks keep the modules whose forward is running.
Installed by the hunt only: the forward hooks cost a call per module call.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as module_hooks

from quickdev.limits.nonfinite.provenance import storage_key
from quickdev.limits.patching import Patcher

Holder = tuple["weakref.ref[nn.Module]", str]


class Modules:
    def __init__(self) -> None:
        self.running: list[nn.Module] = []
        # Modules called from outside any module: names for models built before the hunt.
        self.roots: weakref.WeakSet[nn.Module] = weakref.WeakSet()
        self._parents: weakref.WeakKeyDictionary[nn.Module, Holder] = weakref.WeakKeyDictionary()
        # By id: a WeakKeyDictionary compares tensors with ==, which is elementwise.
        self._holders: dict[int, tuple[weakref.ref[torch.Tensor], Holder]] = {}

    def install(self, patcher: Patcher) -> None:
        handles = [
            module_hooks.register_module_forward_pre_hook(self._push),
            module_hooks.register_module_forward_hook(self._pop, always_call=True),
            module_hooks.register_module_module_registration_hook(self._child),
            module_hooks.register_module_parameter_registration_hook(self._parameter),
        ]
        for handle in handles:
            patcher.on_undo(handle.remove)

    def _child(self, parent: nn.Module, name: str, child: Any) -> None:
        if isinstance(child, nn.Module) and child not in self._parents:
            self._parents[child] = (weakref.ref(parent), name)

    def _parameter(self, holder: nn.Module, name: str, parameter: Any) -> None:
        if isinstance(parameter, torch.Tensor) and self._held(parameter) is None:
            self._holders[id(parameter)] = (weakref.ref(parameter), (weakref.ref(holder), name))

    def _held(self, parameter: torch.Tensor) -> Holder | None:
        entry = self._holders.get(id(parameter))
        if entry is None:
            return None
        if entry[0]() is not parameter:  # an id reused after its tensor was freed
            del self._holders[id(parameter)]
            return None
        return entry[1]

    def _push(self, module: nn.Module, args: Any) -> None:
        if not self.running:
            self.roots.add(module)
        self.running.append(module)

    def _pop(self, module: nn.Module, args: Any, output: Any) -> None:
        running = self.running
        if running and running[-1] is module:
            running.pop()
            return
        for i in range(len(running) - 1, -1, -1):  # a forward that raised past its children
            if running[i] is module:
                del running[i:]
                return

    def current(self) -> nn.Module | None:
        """The innermost module whose forward is running."""
        return self.running[-1] if self.running else None

    def path(self, module: nn.Module | None) -> str | None:
        """``transformer.h.3.attn``; the class name for an outermost module itself."""
        if module is None:
            return None
        parts: list[str] = []
        held: nn.Module | None = module
        while held is not None and held in self._parents and len(parts) < 64:
            parent, name = self._parents[held]
            parts.append(name)
            held = parent()
        if parts:
            return ".".join(reversed(parts))
        return self._path_in_roots(module) or type(module).__name__

    def parameter_name(self, parameter: Any) -> str:
        holder = self._holder_of(parameter)
        if holder is not None:
            module, name = holder
            path = self.path(module)
            return f"{path}.{name}" if module in self._parents else name
        for root in list(self.roots):
            for found, p in root.named_parameters():
                if p is parameter:
                    return found
        shape = "x".join(str(d) for d in parameter.shape)
        return f"parameter [{shape}]"

    def parameter_owner(self, parameter: Any) -> str | None:
        """The path of the module holding ``parameter`` (``fc`` for ``fc.weight``)."""
        holder = self._holder_of(parameter)
        return self.path(holder[0]) if holder is not None else None

    def parameter_at(self, t: torch.Tensor) -> str | None:
        """The name of the parameter whose memory ``t`` is: the parameter itself, or its
        ``.data`` (hand-written SGD updates through it, with grad on)."""
        found = self._parameter_at(t)
        return None if found is None else self.parameter_name(found)

    def _parameter_at(self, t: torch.Tensor) -> torch.Tensor | None:
        key = storage_key(t)
        if key is None:
            return None
        candidates = [p for ref, _ in list(self._holders.values()) if (p := ref()) is not None]
        for root in list(self.roots):
            candidates.extend(root.parameters())
        for p in candidates:
            if p is t or (storage_key(p) == key and p.shape == t.shape):
                return p
        return None

    def _holder_of(self, parameter: Any) -> tuple[nn.Module, str] | None:
        if not isinstance(parameter, torch.Tensor):
            return None
        holder = self._held(parameter)
        if holder is None:
            found = self._parameter_at(parameter)
            holder = None if found is None else self._held(found)
            if holder is None:
                return None
        reference, name = holder
        module = reference()
        return None if module is None else (module, name)

    def _path_in_roots(self, module: nn.Module) -> str | None:
        for root in list(self.roots):
            for name, found in root.named_modules(remove_duplicate=False):
                if found is module:
                    return name or None
        return None
