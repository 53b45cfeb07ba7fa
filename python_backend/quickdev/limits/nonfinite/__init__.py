"""The NaN hunt (``quickdev run --find-nonfinite``): where the first NaN or Inf came from.

While the hunt runs, a ``TorchFunctionMode`` (``mode.py``) looks at what each torch
operation wrote, and hooks on the autograd graph (``backward.py``) at what each backward
function produced. A non-finite value gets an *origin*: the operation that made it from
finite inputs, or the one that was given it (a ``-inf`` fill, a numpy array holding NaN);
operations fed a non-finite value pass their input's origin on (``provenance.py``). Nothing
is blamed yet: an attention mask filled with ``-inf`` is non-finite by design, and softmax
makes it finite again (a NaN new in a call that meets such a value is that call's). Only
when a non-finite value reaches the loss, a parameter's gradient or a parameter
(``sinks.py``) is its origin reported (``report.py``), and the job ends there. ``hunt.py``
holds the state; ``modules.py`` names modules and parameters, ``sites.py`` the user's
line, ``data.py`` ties a value to its DataLoader sample.

This package is torch-free at import (the job imports ``found`` before torch); ``install``
imports the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from quickdev.events import EventHub
    from quickdev.limits.nonfinite.hunt import Hunt
    from quickdev.limits.patching import Patcher
    from quickdev.limits.recorder import Recorder


def install(patcher: Patcher, recorder: Recorder, hub: EventHub) -> Hunt:
    from quickdev.limits.nonfinite.hunt import Hunt

    hunt = Hunt(recorder)
    hunt.install(patcher)
    hub.add(hunt)
    recorder.nonfinite = hunt
    return hunt
