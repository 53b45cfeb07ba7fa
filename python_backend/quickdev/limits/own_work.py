"""Torch work the job does for itself inside the user's code: a shape hint's look at a
value, reading a loss, checking a batch, measuring autocast's speeds, the NaN hunt's checks.

It runs with torch function handling off: no ``TorchFunctionMode`` sees it (the NaN hunt's,
which would take a look's indexing of a tensor holding -inf for a call of the script that
made it finite again; the memory forecast's recorder, which would record it as the loss's
calls; one of the script's own, such as ``with torch.device("meta")``), nor a tensor
subclass's ``__torch_function__`` (user code). And it is marked in a profile, so it is not
counted against the user's line that was running (``profiler_marks.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from quickdev.limits.profiler_marks import own_work_mark


@contextlib.contextmanager
def own_work() -> Iterator[None]:
    # DisableTorchFunction turns off modes and subclasses both (DisableTorchFunctionSubclass
    # leaves the modes on).
    with torch._C.DisableTorchFunction(), own_work_mark():
        yield
