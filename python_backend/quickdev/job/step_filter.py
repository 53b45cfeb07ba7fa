"""Step Into from a call of an ``nn.Module`` lands in that module's ``forward``.

``model(x)`` runs ``Module._wrapped_call_impl``, ``_call_impl``, its nested ``inner``
(and ``self.fc(x)`` first ``Module.__getattr__`` to find ``fc``), the hooks' plumbing
(``BackwardHook``, ``is_compiling``, ``Function.apply`` for backward hooks) before
``forward``: about 33 presses of F11 in VS Code. debugpy's ``rules`` filter
whole files or modules, and excluding ``torch/nn/modules/module.py`` would hide
``Module.to``, ``state_dict`` and the rest from stepping too. So the job asks pydevd, the
debugger inside debugpy, to treat just those functions as filtered: pydevd asks
``PyDB.apply_files_filter`` about each frame it could stop in (and caches the answer per
code object), and a frame it filters is stepped through and left out of the call stack,
as the session's rules do for Quickdev's own files. Every other frame of torch is
steppable as before, a torch module's own ``forward`` (``Linear.forward``) included.

Which functions are dispatch is found, not listed: the job calls a probe module that has
every kind of hook (forward pre/post, full backward pre/post) under ``sys.setprofile``,
and every torch function that runs before its ``forward`` or after it returns is
dispatch. Quickdev's own hooks are in Quickdev's files, which the session's rules leave
out already; what the tensor-shape looks call on the user's lines (``torch.no_grad``,
``contextlib``) is filtered too, so stepping never lands there.
"""

from __future__ import annotations

import logging
import os
import sys
import types
from typing import Any

log = logging.getLogger(__name__)


def install(py_db: Any) -> int:
    """Filter the dispatch frames in ``py_db`` (pydevd's ``PyDB``); returns how many
    functions are filtered, 0 when torch is not imported or pydevd lacks the hook."""
    torch = sys.modules.get("torch")
    original = getattr(py_db, "apply_files_filter", None)
    if torch is None or original is None:
        return 0
    dispatch = dispatch_code(torch)

    def apply_files_filter(frame: Any, original_filename: str, force: bool) -> bool:
        if getattr(frame, "f_code", None) in dispatch or _called_by_a_look(frame):
            return True
        return bool(original(frame, original_filename, force))

    py_db.apply_files_filter = apply_files_filter
    log.info("stepping skips %d torch.nn.Module dispatch functions", len(dispatch))
    return len(dispatch)


# The tensor-shape looks on the user's lines (limits/shapes): Quickdev's own work, which
# calls torch and the standard library (torch.no_grad, contextlib) in the user's frame.
_LOOKS_DIR = (
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "limits", "shapes")
    + os.sep
)
_LIBRARY_DIRS = tuple(
    {os.path.join(p, "lib") + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
)


def _called_by_a_look(frame: Any) -> bool:
    """A library frame (torch, the standard library) that a tensor-shape look called:
    stepped through as Quickdev's own frames are, so Step Into after a recorded line never
    lands in a ``contextlib`` the user's line did not call. Library frames that Quickdev
    calls on the user's behalf (the loader limit's ``next``, a patched ``torch.save``)
    stay steppable, as does any library frame the user's code called."""
    name: str = getattr(getattr(frame, "f_code", None), "co_filename", "")
    if not name.startswith(_LIBRARY_DIRS):
        return False
    caller = frame.f_back
    while caller is not None:
        name = caller.f_code.co_filename
        if not name.startswith(_LIBRARY_DIRS):
            return name.startswith(_LOOKS_DIR)
        caller = caller.f_back
    return False


def dispatch_code(torch: Any) -> frozenset[types.CodeType]:
    """The code objects of ``nn.Module``'s call dispatch, its nested functions included,
    and of the torch functions it runs around ``forward``."""
    module = torch.nn.Module
    found: set[types.CodeType] = set()
    # __getattr__: ``self.fc(x)`` looks ``fc`` up there before calling it.
    for name in ("__call__", "__getattr__", "_wrapped_call_impl", "_call_impl", "_slow_forward"):
        function = getattr(module, name, None)
        code = getattr(function, "__code__", None)
        if isinstance(code, types.CodeType):
            found |= _with_nested(code)
    found |= _run_around_forward(torch)
    return frozenset(found)


def _with_nested(code: types.CodeType) -> set[types.CodeType]:
    found = {code}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _with_nested(const)
    return found


def _run_around_forward(torch: Any) -> set[types.CodeType]:
    """The torch functions a module call runs besides its ``forward``, with every kind of
    hook registered (each hook kind brings its own plumbing)."""
    torch_dir = os.path.dirname(os.path.realpath(torch.__file__)) + os.sep
    in_forward = 0
    seen: set[types.CodeType] = set()

    class Probe(torch.nn.Module):  # type: ignore[misc]
        def forward(self, x: Any) -> Any:
            return x * 2

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        nonlocal in_forward
        code = frame.f_code
        if code is Probe.forward.__code__:
            in_forward += 1 if event == "call" else -1 if event == "return" else 0
        elif (
            event == "call"
            and not in_forward
            and os.path.realpath(code.co_filename).startswith(torch_dir)
        ):
            seen.add(code)

    probe = Probe()
    handles = [
        probe.register_forward_pre_hook(lambda m, args: None),
        probe.register_forward_hook(lambda m, args, out: None),
        probe.register_full_backward_pre_hook(lambda m, grad: None),
        probe.register_full_backward_hook(lambda m, grad_in, grad_out: None),
    ]
    previous = sys.getprofile()
    try:
        with torch.enable_grad():
            x = torch.ones(1, requires_grad=True)
            sys.setprofile(profile)
            try:
                probe(x)
            finally:
                sys.setprofile(previous)
    finally:
        for handle in handles:
            handle.remove()
    return seen
