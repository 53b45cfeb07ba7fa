"""Where an operation ran, in the user's terms: their file and line, the module whose
forward ran it (``transformer.h.3.attn``), the name of the operation."""

from __future__ import annotations

import weakref
from types import FrameType
from typing import Any

import torch
from torch import nn
from torch.overrides import resolve_name

from quickdev.limits.nonfinite.found import FrameChain
from quickdev.limits.nonfinite.provenance import storage_key
from quickdev.limits.patching import Patcher
from quickdev.limits.user_code import is_user_file


def user_frame(frame: FrameType | None) -> FrameType | None:
    """The innermost frame in the user's files, from ``frame`` outwards."""
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            return frame
        frame = frame.f_back
    return None


def frame_chain(frame: FrameType | None) -> FrameChain:
    """``frame`` and its callers up to the outermost user frame, outermost first, each
    with the line it is at now (the job's own frames above the script are left out)."""
    chain: FrameChain = []
    while frame is not None:
        chain.append((frame, frame.f_lineno))
        frame = frame.f_back
    users = [i for i, (f, _) in enumerate(chain) if is_user_file(f.f_code.co_filename)]
    outermost = users[-1] if users else len(chain) - 1
    return list(reversed(chain[: outermost + 1]))


def op_name(func: Any) -> str:
    try:
        name = resolve_name(func)
    except Exception:  # an object torch has no name for
        name = None
    return name or f"torch.{getattr(func, '__name__', type(func).__name__)}"


class ModuleStack:
    """The modules whose forward is running, outermost first, kept by global module hooks
    (the hunt only: they cost a call per module). Names are found from the outermost."""

    def __init__(self) -> None:
        self.modules: list[nn.Module] = []
        self.roots: weakref.WeakSet[nn.Module] = weakref.WeakSet()
        self._names: weakref.WeakKeyDictionary[nn.Module, dict[int, str]] = (
            weakref.WeakKeyDictionary()
        )

    def install(self, patcher: Patcher) -> None:
        push = nn.modules.module.register_module_forward_pre_hook(self._push)
        pop = nn.modules.module.register_module_forward_hook(self._pop, always_call=True)
        patcher.on_undo(push.remove)
        patcher.on_undo(pop.remove)

    def _push(self, module: nn.Module, args: Any) -> None:
        if not self.modules:
            self.roots.add(module)
        self.modules.append(module)

    def _pop(self, module: nn.Module, args: Any, output: Any) -> None:
        modules = self.modules
        if modules and modules[-1] is module:
            modules.pop()
            return
        for i in range(len(modules) - 1, -1, -1):  # a forward that raised past its children
            if modules[i] is module:
                del modules[i:]
                return

    def current(self) -> tuple[nn.Module, nn.Module] | None:
        """(outermost, innermost) module running now."""
        return (self.modules[0], self.modules[-1]) if self.modules else None

    def path(self, pair: tuple[nn.Module, nn.Module] | None) -> str | None:
        """``transformer.h.3.attn``; the class name for the outermost module itself."""
        if pair is None:
            return None
        root, inner = pair
        names = self._names_in(root)
        name = names.get(id(inner))
        if name is None:
            self._names.pop(root, None)  # a module added since: look again, once
            name = self._names_in(root).get(id(inner))
        return name or type(inner).__name__

    def parameter_at(self, t: torch.Tensor) -> str | None:
        """The name of the parameter whose memory ``t`` is: the parameter itself, or its
        ``.data`` (hand-written SGD updates through it, with grad on)."""
        key = storage_key(t)
        if key is None:
            return None
        for root in list(self.roots):
            for name, p in root.named_parameters():
                if storage_key(p) == key and p.shape == t.shape:
                    return name
        return None

    def parameter_owner(self, parameter: Any) -> str | None:
        """The path of the module holding ``parameter`` (``fc`` for ``fc.weight``)."""
        name = self.parameter_name(parameter)
        if name.startswith("parameter ["):
            return None
        owner = name.rpartition(".")[0]
        if owner:
            return owner
        roots = list(self.roots)
        return type(roots[0]).__name__ if len(roots) == 1 else None

    def parameter_name(self, parameter: Any) -> str:
        for root in list(self.roots):
            for name, p in root.named_parameters():
                if p is parameter:
                    return name
        found = self.parameter_at(parameter)
        if found is not None:
            return found
        shape = "x".join(str(d) for d in parameter.shape)
        return f"parameter [{shape}]"

    def _names_in(self, root: nn.Module) -> dict[int, str]:
        names = self._names.get(root)
        if names is None:
            names = {id(m): name for name, m in root.named_modules(remove_duplicate=False)}
            self._names[root] = names
        return names
