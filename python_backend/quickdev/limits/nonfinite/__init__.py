"""The NaN hunt (``quickdev run --find-nonfinite``): where the first NaN or Inf came from.

While the hunt runs, a ``TorchFunctionMode`` (``mode.py``) looks at what each torch
operation wrote, and hooks on the autograd graph (``backward.py``) at what each backward
function produced. A non-finite value gets an *origin*: the operation that made it from
finite inputs, or the one that was given it (a ``-inf`` fill, a numpy array holding NaN);
operations fed a non-finite value pass their input's origin on (``provenance.py``). Nothing
is blamed yet: an attention mask filled with ``-inf`` is non-finite by design, and softmax
makes it finite again (a NaN new in a call that meets such a value is that call's). Only
when a non-finite value reaches the loss, a parameter's gradient or a parameter
(``sinks.py``) is its origin reported (``report.py``), and the job ends there.

``hunt.py`` puts the parts together: ``forward.py`` follows each call, ``backward.py``
each backward function, ``data.py`` ties a value to its DataLoader sample, ``masking.py``
says when a row was masked whole, ``float16.py`` checks values against the dtypes a GPU
would hold them in, ``failures.py`` says the hunt's own errors; ``modules.py`` names
modules and parameters, ``sites.py`` the user's line. ``state.py`` holds what they share.

This package is torch-free at import (the job imports ``found`` before torch); ``install``
imports the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from quickdev.events import EventHub
    from quickdev.limits.device.engine import DeviceEngine
    from quickdev.limits.nonfinite.hunt import Hunt
    from quickdev.limits.patching import Patcher
    from quickdev.limits.recorder import Recorder


# Why a CUDA autocast region runs in float32 on the CPU under the hunt (the job's result).
FLOAT32_REGIONS = (
    "float32 under the NaN hunt, which checks each call against the dtype CUDA's autocast "
    "would give it"
)


def install(
    patcher: Patcher, recorder: Recorder, hub: EventHub, engine: DeviceEngine | None = None
) -> Hunt:
    """``engine``: the device stand-in, whose CUDA autocast regions the hunt checks as a
    GPU would compute them (``float16.py``)."""
    from quickdev.limits.nonfinite.hunt import Hunt

    hunt = Hunt(recorder, engine)
    hunt.install(patcher)
    hub.add(hunt)
    recorder.nonfinite = hunt
    return hunt
