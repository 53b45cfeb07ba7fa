"""Tensors in the debugger's Variables view: ``f32[8, 3, 32, 32] cpu``, NaN/Inf flagged.

pydevd (inside debugpy) asks its ``StrPresentationProvider`` extensions for a value's text
before falling back to ``repr``; a tensor's repr is its values, which say nothing of its shape.
``register`` adds ours to pydevd's list in this process (the job calls it before debugpy
listens). The tensor still unfolds into its attributes as before: only the one-line value
changes. It reads as the editor's shape hints and hovers do (``rundir.shapes.tensor_text``).
"""

from __future__ import annotations

import logging
from typing import Any

from quickdev.rundir.shapes import tensor_text

log = logging.getLogger(__name__)


def describe(tensor: Any) -> str:
    # torch is imported by then (a tensor exists); imported here so pydevd's import of this
    # module stays light.
    from quickdev.limits.own_work import own_work
    from quickdev.limits.shapes.facts import facts_of

    with own_work():  # not seen by the script's modes (the NaN hunt's) as the script's calls
        return tensor_text(facts_of(tensor, stats=False))


def _is_tensor_type(type_object: type) -> bool:
    return any(
        cls.__module__.startswith("torch") and cls.__name__ == "Tensor"
        for cls in type_object.__mro__
    )


def register() -> None:
    """Put the tensor summary first among pydevd's string providers (debugpy imported)."""
    try:
        from _pydevd_bundle.pydevd_extension_api import (  # type: ignore[import-not-found]
            StrPresentationProvider,
        )
        from _pydevd_bundle.pydevd_extension_utils import (  # type: ignore[import-not-found]
            extensions_of_type,
        )
    except ImportError:
        log.warning("pydevd's extension API is missing; tensors show their values only")
        return

    class TensorPresentation(StrPresentationProvider):  # type: ignore[misc]
        def can_provide(self, type_object: type, type_name: str) -> bool:
            return _is_tensor_type(type_object)

        def get_str(self, val: Any) -> str:
            try:
                return describe(val)
            except Exception:
                # A tensor subclass this does not understand: pydevd's own text.
                return repr(val)

    providers = extensions_of_type(StrPresentationProvider)
    if not any(type(p).__name__ == "TensorPresentation" for p in providers):
        providers.insert(0, TensorPresentation())
