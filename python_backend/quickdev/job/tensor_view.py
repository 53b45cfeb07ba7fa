"""Tensors in the debugger's Variables view: ``float32[8, 3, 32, 32] cpu``, NaN/Inf flagged.

pydevd (inside debugpy) asks its ``StrPresentationProvider`` extensions for a value's text
before falling back to ``repr``; a tensor's repr is its values, which say nothing of its shape.
``register`` adds ours to pydevd's list in this process (the job calls it before debugpy
listens). The tensor still unfolds into its attributes as before: only the one-line value
changes. No torch import here: a value is recognised by its type's module and name.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

# Checking every element for NaN/Inf is a pass over the data; above this many, skip it.
NONFINITE_CHECK_MAX = 10_000_000


def describe(tensor: Any) -> str:
    dtype = str(tensor.dtype).removeprefix("torch.")
    text = f"{dtype}{list(tensor.shape)} {tensor.device}"
    if tensor.requires_grad:
        text += " grad"
    if tensor.layout is not None and str(tensor.layout) != "torch.strided":
        return f"{text} {str(tensor.layout).removeprefix('torch.')}"
    if tensor.is_floating_point() and 0 < tensor.numel() <= NONFINITE_CHECK_MAX:
        try:
            data = tensor.detach()
            if bool(data.isnan().any()):
                text += " NaN"
            if bool(data.isinf().any()):
                text += " Inf"
        except RuntimeError:
            # Meta tensors and some backends cannot be read; the shape is still worth showing.
            pass
    return text


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
